"""The presentation kit's ASCII rule: every character outside printable ASCII shown as
Python's unicode_escape shows it."""

from __future__ import annotations

from evalkit.present.safe import ascii_text


def test_ascii_text_escapes_like_unicode_escape():
    hostile = "caf\u00e9 \u202eevil\x1b[2J\\n\ttab \U0001f600"
    assert ascii_text(hostile) == "caf\\xe9 \\u202eevil\\x1b[2J\\\\n\\ttab \\U0001f600"
    assert ascii_text(3.5) == "3.5"
