"""The shell commands the docs show: every fenced ```bash / ```sh / ```shell / ```console block of
README.md and the other Markdown pages, read into commands a test can run; and the synopses
(``evalkit CMD [--flag X]`` lines of untagged blocks).

A block's lines are read as a shell would: ``\\`` continues a line, ``#`` starts a comment, ``&&``,
``;``, ``|`` and ``&`` separate commands, ``NAME=VALUE`` in front of a program sets its environment. In
a ``console`` block only the lines after the ``$`` prompt are commands (the others are output).
Square brackets around options (``[--rubric R]``, a synopsis's optional part) are dropped, so the
command runs with every option it shows. A comment that says ``exit N`` is the exit code the
command is documented to end with.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHELL_LANGUAGES = ("bash", "sh", "shell", "console")
SEPARATORS = ("&&", "||", ";", "|", "&")
_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w-]*)")
_EXIT = re.compile(r"\bexit (\d+)\b")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Command:
    doc: str  # the page, relative to the checkout
    line: int  # where the command starts on the page
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()  # NAME=VALUE written in front of the program
    comment: str = ""  # the comment at the end of the command's line
    background: bool = False  # ends with `&`

    @property
    def program(self) -> str:
        return Path(self.argv[0]).name if self.argv else ""

    @property
    def documented_exit(self) -> int:
        """The exit code the doc's comment gives (``# exit 3: ...``), else 0."""
        found = _EXIT.search(self.comment)
        return int(found.group(1)) if found else 0

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}: {shlex.join(self.argv)}"


def doc_pages(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown page in the checkout's own folders (no hidden folder, no venv)."""
    pages = list(root.glob("*.md"))
    for top in sorted(root.iterdir()):
        if top.is_dir() and not top.name.startswith(".") and top.name not in ("node_modules", "build", "dist"):
            pages.extend(p for p in top.rglob("*.md") if not any(part.startswith(".") for part in p.parts))
    return sorted(set(pages))


def shell_blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """(line of the block's first line, language, lines) of each fenced shell block of a page."""
    return [block for block in fenced_blocks(text) if block[1] in SHELL_LANGUAGES]


def synopsis_lines(text: str) -> list[tuple[int, str]]:
    """(line, text) of each ``evalkit ...`` line of an untagged fenced block (a command's synopsis)."""
    return [
        (first + offset, line)
        for first, language, lines in fenced_blocks(text)
        if not language
        for offset, line in enumerate(lines)
        if line.startswith("evalkit ")
    ]


def fenced_blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """(line of the block's first line, language, lines) of each fenced block of a page."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        fence, language = opened.group(1), opened.group(2).lower()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        blocks.append((i + 2, language, lines[i + 1 : end]))
        i = end + 1
    return blocks


def _comment(line: str) -> str:
    """The text after the first unquoted ``#`` that starts a word, else ""."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[i + 1 :].strip()
    return ""


def _without_optional_brackets(line: str) -> str:
    """A synopsis's ``[--flag VALUE]`` as ``--flag VALUE``: brackets that open or close a word."""
    return re.sub(r"\](?=\s|$)", "", re.sub(r"(?<!\S)\[(?=-)", "", line))


def _logical_lines(language: str, lines: list[str]) -> list[tuple[int, str]]:
    """(offset in the block, text) of each command line, continuations joined."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for offset, raw in enumerate(lines):
        if pending is None:
            stripped = raw.strip()
            if language == "console":
                if not stripped.startswith("$ "):
                    continue
                stripped = stripped[2:]
            if not stripped or stripped.startswith("#"):
                continue
            pending = (offset, stripped)
        else:
            pending = (pending[0], pending[1] + " " + raw.strip())
        if pending[1].endswith("\\"):
            pending = (pending[0], pending[1][:-1].rstrip())
            continue
        out.append(pending)
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def commands_of_block(doc: str, first_line: int, language: str, lines: list[str]) -> list[Command]:
    commands = []
    for offset, text in _logical_lines(language, lines):
        comment = _comment(text)
        lexer = shlex.shlex(_without_optional_brackets(text), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        segment: list[str] = []
        for token in [*lexer, ";"]:
            if token not in SEPARATORS:
                segment.append(token)
                continue
            env = []
            while segment and _ASSIGNMENT.match(segment[0]):
                name, value = segment.pop(0).split("=", 1)
                env.append((name, value))
            if segment or env:
                commands.append(
                    Command(doc, first_line + offset, tuple(segment), tuple(env), comment, background=token == "&")
                )
            segment = []
    return commands


def doc_blocks(root: Path = ROOT) -> list[tuple[str, int, list[Command]]]:
    """(page, line, commands) of each shell block that has a command."""
    out = []
    for page in doc_pages(root):
        doc = page.relative_to(root).as_posix()
        for first_line, language, lines in shell_blocks(page.read_text(encoding="utf-8")):
            commands = commands_of_block(doc, first_line, language, lines)
            if commands:
                out.append((doc, first_line, commands))
    return out
