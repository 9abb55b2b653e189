"""Text from a trajectory, a database or a judge, made safe for a terminal, markdown and CSV.

Every string that evalkit did not write itself (run ids, model names, scenario ids, assistant
text, a judge's rationale) may hold escape sequences: ``ESC [2J`` clears a terminal, an OSC
sequence sets its title or a hyperlink, CR returns the cursor and overwrites what was printed,
U+202E reverses the text that follows. So every table cell and every line built from such text
goes through :func:`sanitize` before it is printed:

- C0 controls (U+0000-U+001F, tab, LF and CR included), DEL and C1 controls (U+0080-U+009F) are
  shown as ``\\t``, ``\\n``, ``\\r`` or ``\\xNN``;
- bidirectional controls (U+200E, U+200F, U+061C, U+202A-U+202E, U+2066-U+2069), the line and
  paragraph separators (U+2028, U+2029) and lone surrogates (which cannot even be encoded to
  UTF-8) are shown as ``\\uNNNN``.

A backslash already in the text is left alone: the escape is for the eye, not a reversible
encoding (the JSON outputs carry the exact text).

Markdown cells (:func:`md_text`) fold line breaks and tabs into one space first (a table row is
one line; this is what a reader of a rationale wants), then sanitize, then turn ``& < >`` into
entities (GitHub renders inline HTML) and backslash-escape markdown punctuation, so a value can
neither break the table (``|``) nor inject a link, an image or HTML. ``_`` is escaped only where
it could start or end emphasis (not inside a word: ``end_state`` stays readable).

Markdown text must not link or mention either: GitHub turns a bare ``https://x``, ``www.x`` or
``a@b.c`` into a link and ``@team`` into a mention (a notification). Backslash escapes and
character references do not stop it: GitHub finds mentions, e-mail addresses and, outside
comments, URLs again in the rendered text, after escapes are resolved (GFM spec, "Autolinks
(extension)"; micromark-extension-gfm-autolink-literal documents the two passes). Nothing is
linked inside a code span, in either pass. So :func:`md_text` shows every word (a run of
non-space characters) holding ``://``, ``www.`` or ``@`` (any case) as a code span, exactly as
:func:`md_code` would: the characters are kept (a run id can still be copied), only inert.

Code cells (:func:`md_code`, a command in a table) are code spans: sanitized, ``|`` escaped,
fenced by enough backticks that the text cannot close them.

HTML (:func:`html_text`): ``& < > " '`` as entities, and the controls :func:`sanitize` escapes
shown the same way, tab and line feed kept (the page lays text out with them), CR read as LF.

ASCII text (:func:`ascii_text`, the verdicts console report, which promises pure ASCII): every
character outside printable ASCII escaped as Python's ``unicode_escape`` writes it (``\\xe9``,
``\\u202e``, ``\\n``), and a backslash doubled, so the line reads back unambiguously.

CSV cells (:func:`csv_cell`): text beginning with ``= + - @``, tab or CR is prefixed with ``'``
(OWASP's advice against formula injection), after sanitizing. Numbers (``int``/``float``) are
written as numbers and never prefixed: ``-0.5`` is a numeric cell that a spreadsheet reads as a
number, not a formula. A *string* that looks like a negative number (a model called ``-1``) is
text and is prefixed.
"""

from __future__ import annotations

import html
import re
from typing import Any

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _escape_table() -> dict[int, str]:
    named = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
    table = {cp: named.get(cp, f"\\x{cp:02x}") for cp in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
    for ch in BIDI_CONTROLS + "\u2028\u2029":
        table[ord(ch)] = f"\\u{ord(ch):04x}"
    for cp in range(0xD800, 0xE000):
        table[cp] = f"\\u{cp:04x}"
    return table


_ESCAPES = _escape_table()


def sanitize(value: Any) -> str:
    """``str(value)`` with every control, bidi control and lone surrogate shown escaped."""
    text = value if isinstance(value, str) else str(value)
    # Every escaped character is non-printable, so printable text (nearly all of it) is returned as is.
    return text if text.isprintable() else text.translate(_ESCAPES)


_FOLD = re.compile(r"(?:\r\n|[ \t\n])+")
_MD_SPECIAL = re.compile(r"([\\`*\[\]|~!#]|(?<![^\W_])_|_(?![^\W_]))")


def _one_line(value: Any) -> str:
    """Whitespace runs and line breaks folded to one space, outer spaces cut, then sanitized."""
    return sanitize(_FOLD.sub(" ", value if isinstance(value, str) else str(value)).strip(" "))


_LINKABLE = re.compile(r"://|www\.|@", re.IGNORECASE)


def _md_words(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_text(value: Any) -> str:
    """Any value as one line of markdown (a table cell or a paragraph), inert: no HTML, no
    markup, no link and no mention (a word GitHub would link is a code span)."""
    text = _one_line(value)
    if not _LINKABLE.search(text):
        return _md_words(text)
    return " ".join(_code_span(w) if _LINKABLE.search(w) else _md_words(w) for w in text.split(" "))


def md_code(value: Any) -> str:
    """Any value as an inline code span in a markdown table cell (a command), inert: sanitized and
    folded to one line, ``|`` escaped (GitHub splits cells before it parses code), fenced by one
    backtick more than the longest run inside and padded when it starts or ends with one. Code
    spans render no HTML and no markdown, so nothing else needs escaping."""
    return _code_span(_one_line(value))


def _code_span(text: str) -> str:
    """Already one-line, sanitized text as a code span (see :func:`md_code`)."""
    text = text.replace("|", "\\|")
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def ascii_text(value: Any) -> str:
    """``str(value)`` as one line of ASCII: non-ASCII characters and controls escaped, backslashes
    doubled (``unicode_escape``)."""
    return str(value).encode("unicode_escape").decode("ascii")


def csv_cell(value: Any) -> Any:
    """A value for :mod:`csv`: None as an empty cell, numbers (and bools) unchanged, text sanitized
    and neutralised when a spreadsheet would read it as a formula."""
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return value
    text = value if isinstance(value, str) else str(value)
    safe = sanitize(text)
    return "'" + safe if text.startswith(CSV_FORMULA_START) else safe


_HTML_ESCAPES = {cp: text for cp, text in _ESCAPES.items() if cp not in (0x09, 0x0A)}
_NEWLINES = re.compile(r"\r\n?")


def html_text(value: Any) -> str:
    """Escape any value for HTML text and attribute positions (the report's page): ``& < > " '``
    as entities, and every control, bidi control and lone surrogate shown escaped as
    :func:`sanitize` does, so none is raw in the page's source either (a character reference
    would still reach the browser, which would reverse text after U+202E). Tab and line feed
    stay (the page lays rationales out with them); CR and CRLF become LF, as an HTML parser
    reads them anyway."""
    text = value if isinstance(value, str) else str(value)
    if not text.isprintable():
        text = _NEWLINES.sub("\n", text).translate(_HTML_ESCAPES)
    return html.escape(text, quote=True)
