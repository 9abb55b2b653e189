"""Control characters never appear raw in the HTML report's source: ESC, U+202E (right-to-left
override) and every other C0/C1/bidi control or line separator from a run id, a model, a title,
a command or a judge's rationale is shown escaped (``\\x1b``, ``\\u202e``), as in the terminal.
Tab and line feed stay (the page lays text out with them); CR becomes LF."""

from __future__ import annotations

import re

import pytest
import report_fixtures as rf

from evalkit.present import html_text
from evalkit.present.safe import BIDI_CONTROLS
from evalkit.report import build_report, render_html
from evalkit.trajectory.builders import cmd, read

ESC, RLO = "\x1b", "\u202e"
NASTY = f"{ESC}[2J{ESC}]0;pwned\x07 {RLO}txt.exe\u2066\u2028\x85\x00\x7f\rCR\r\nCRLF"
RAW_FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029" + BIDI_CONTROLS + "]")


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    db = rf.hostile_db(
        tmp_path_factory.mktemp("controls"),
        "nasty",
        title=f"title {NASTY}",
        calls=[read("get_ecam"), cmd(f"ctl{NASTY}", 1), cmd("ext_pwr", 1)],
        run_id=f"run{ESC}[31m{RLO}1",
        model=f"model{RLO}x",
        rationale=NASTY,
    )
    return render_html(build_report(db, title=f"report {NASTY}", made_at="2026-01-01T00:00:00Z"))


def test_html_source_holds_no_raw_control_or_bidi_character(page):
    found = sorted({f"U+{ord(c):04X}" for c in RAW_FORBIDDEN.findall(page)})
    assert found == []


def test_html_shows_esc_and_rlo_as_visible_escapes(page):
    assert "\\x1b[2J" in page and "\\u202etxt.exe" in page and "run\\x1b[31m\\u202e1" in page
    assert "model\\u202ex" in page


def test_html_text_escapes_controls_keeps_tab_and_newline():
    assert html_text(f"a{ESC}b{RLO}c\td\ne") == "a\\x1bb\\u202ec\td\ne"
    assert html_text("x\r\ny\rz") == "x\ny\nz"
    assert html_text("\x00\x85\u2028\ud800") == "\\x00\\x85\\u2028\\ud800"
    assert html_text('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"


def test_html_text_of_printable_text_is_html_escape():
    import html

    for text in ("plain", "é ü 中文 🙂", "<b>'q'</b>"):
        assert html_text(text) == html.escape(text, quote=True)
