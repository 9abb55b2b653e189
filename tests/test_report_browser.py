"""The HTML report in a real headless browser (Debian's chromium; CI installs it in .ci/run).

Checks what only a browser can: the page loads with no console error, no network request beyond
the file itself, no script or dialog from hostile trajectory text, every section and chart is
laid out with a size; and it saves a full-page screenshot next to the page in the test's tmp
directory (set EVALKIT_BROWSER_OUT=DIR to keep a copy of both for a human to look at).

Without chromium the tests skip and say why, unless EVALKIT_REQUIRE_BROWSER=1 (set by .ci/run),
where a missing browser is a failure: CI must not pass by skipping them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import report_fixtures as rf
from report_browser import Browser, find_chromium

from evalkit.report import build_report, render_html

pytestmark = pytest.mark.slow  # a browser

SECTIONS = ["headline", "vector", "safety", "runs", "judge", "agreement", "provenance", "contamination"]

PROBES = {
    "sections": "JSON.stringify(%s.map(id => { const e = document.getElementById(id); "
    "return e ? [id, e.getBoundingClientRect().height > 0] : [id, false]; }))" % json.dumps(SECTIONS),
    "charts": "JSON.stringify(Array.from(document.querySelectorAll('svg.chart')).map(s => "
    "[s.getAttribute('class'), Math.round(s.getBoundingClientRect().width), Math.round(s.getBoundingClientRect().height)]))",
    "scripts": "document.scripts.length",
    "handlers": "Array.from(document.querySelectorAll('*')).filter(e => Array.from(e.attributes)"
    ".some(a => a.name.startsWith('on'))).length",
    "text": "document.body.innerText",
    "title": "document.title",
    "qualitative": "getComputedStyle(document.getElementById('judge')).borderTopStyle",
}


@pytest.fixture(scope="session")
def chromium():
    path = find_chromium()
    if path is None:
        why = "chromium is not installed (apt-get install chromium; .ci/run installs it)"
        if os.environ.get("EVALKIT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"EVALKIT_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    return path


@pytest.fixture(scope="module")
def browser(chromium):
    b = Browser(chromium)
    yield b
    b.close()


@pytest.fixture(scope="module")
def page(browser, tmp_path_factory):
    out = tmp_path_factory.mktemp("browser")
    db = rf.build_db(out)
    html_path = out / "report.html"
    html_path.write_text(render_html(build_report(db, title="evalkit report (browser test)")), encoding="utf-8")
    result = browser.load(html_path.resolve().as_uri(), PROBES)
    (out / "report.png").write_bytes(result.screenshot)
    keep = os.environ.get("EVALKIT_BROWSER_OUT")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for name in ("report.html", "report.png"):
            shutil.copy(out / name, Path(keep) / name)
    return html_path, result


def test_page_has_no_console_errors(page):
    _, result = page
    assert result.console_errors() == []
    assert result.dialogs() == []


def test_page_makes_no_network_request(page):
    html_path, result = page
    assert result.requests() == [html_path.resolve().as_uri()]


def test_every_section_is_laid_out(page):
    _, result = page
    assert json.loads(result.values["sections"]) == [[s, True] for s in SECTIONS]


def test_charts_render_with_a_size(page):
    _, result = page
    charts = json.loads(result.values["charts"])
    kinds = {c[0] for c in charts}
    assert {"chart chart-bar", "chart chart-heatmap", "chart chart-reliability"} <= kinds
    assert all(w > 50 and h > 20 for _, w, h in charts)


def test_hostile_text_is_inert_and_visible(page):
    _, result = page
    assert result.values["scripts"] == 0
    assert result.values["handlers"] == 0
    assert rf.XSS_RUN_ID in result.values["text"]
    assert rf.XSS_MODEL in result.values["text"]


def test_judge_section_is_visibly_set_apart(page):
    _, result = page
    assert result.values["qualitative"] == "dashed"
    assert "qualitative, outside the score" in result.values["text"].lower()


def test_screenshot_saved(page):
    html_path, result = page
    png = (html_path.parent / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    assert png == result.screenshot


def test_harness_sees_console_errors_and_requests(browser, tmp_path):
    """The checks above can fail: a page breaking the rules is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src \'none\'">'
        '</head><body><img src="http://192.0.2.1/x.png"><p>x</p></body></html>',
        encoding="utf-8",
    )
    result = browser.load(bad.as_uri(), {}, screenshot=False)
    assert any("Content Security Policy" in e for e in result.console_errors())
    assert "http://192.0.2.1/x.png" in result.requests()
