"""`evalkit report` at 10^4 runs, the way its reader meets it: the command writes a main page of
bounded size and one page per scenario beside it, and in a real browser (Playwright driving Debian's
chromium, as tests/test_view_browser.py) the main page renders fast and every run link on it
lands on an element of its target page: the worst runs' details, a scenario page's row, a run's
details on its scenario page.

Without chromium or Playwright the browser test skips and says why, unless
EVALKIT_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import report_scale
from click.testing import CliRunner
from report_browser import playwright_chromium

from evalkit.cli import cli

pytestmark = pytest.mark.slow

RUNS = 10_000
MAIN_PAGE_LIMIT = 5_000_000  # bytes: the goal at 10^5 runs, held at 10^4 too
RENDER_LIMIT_S = 2.0


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """10^4 runs over 100 scenarios, half judged; `evalkit report --html` run on them."""
    out = tmp_path_factory.mktemp("report-scale")
    db = report_scale.build(out / "scale.db", RUNS, scenarios=100, judged=0.5)
    html = out / "report.html"
    result = CliRunner().invoke(cli, ["report", "--db", str(db), "--html", str(html)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return db, html


@pytest.fixture(scope="module")
def browser():
    yield from playwright_chromium()


def _hrefs(text: str) -> list[str]:
    return re.findall(r'<a href="([^"]+)"', text)


def test_main_page_at_ten_thousand_runs_is_small_and_every_scenario_has_its_page(written):
    db, html = written
    text = html.read_text(encoding="utf-8")
    assert html.stat().st_size <= MAIN_PAGE_LIMIT
    pages = sorted((html.parent / "report-scenarios").iterdir())
    assert len(pages) == 100
    assert "10000 runs" in text and "Worst runs" in text and "Scenarios and their runs" in text
    # every run is listed once across the scenario pages
    texts = [p.read_text(encoding="utf-8") for p in pages]
    rows = sum(t.count('<tr><td><a href="#run-') + t.count('<tr><td><span id="run-') for t in texts)
    assert rows == RUNS


def test_every_link_on_the_main_page_lands_on_an_element(written):
    """Without a browser: each href's file exists and holds the id it points to."""
    _, html = written
    texts: dict[Path, str] = {}
    hrefs = _hrefs(html.read_text(encoding="utf-8"))
    assert sum("report-scenarios/" in h for h in hrefs) >= 100
    for href in hrefs:
        page, _, anchor = href.partition("#")
        target = (html.parent / unquote(page)).resolve() if page else html
        assert target.is_file(), href
        text = texts.setdefault(target, target.read_text(encoding="utf-8"))
        if anchor:
            assert f'id="{anchor}"' in text, href


def test_main_page_renders_fast_and_run_links_reach_the_details(written, browser):
    _, html = written
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    times = []
    for _ in range(3):  # the best of three loads: the first also starts the renderer, and CI runs loaded
        t0 = time.perf_counter()
        page.goto(html.resolve().as_uri(), wait_until="load")
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        times.append(time.perf_counter() - t0)
    rendered = min(times)
    assert rendered <= RENDER_LIMIT_S, f"the main page took {rendered:.2f} s to render (loads: {times})"
    assert errors == []
    assert page.locator("#headline table.models").is_visible()

    # a worst run's id opens its details on the same page
    link = page.locator("#runs table.runs a").first
    anchor = link.get_attribute("href")[1:]
    link.click()
    details = page.locator(f'details.drill:has([id="{anchor}"])')
    assert details.count() == 1
    assert details.get_attribute("open") is not None and details.locator("table.checklist").is_visible()

    # a scenario's link opens its page; a run there with details opens them; a run without is a row
    page.locator("#scenarios table.scenarios a").first.click()
    page.wait_for_load_state("load")
    assert "report-scenarios/" in urlsplit(page.url).path
    rows = page.locator("table.runs tbody tr")
    assert rows.count() == RUNS // 100
    drilled = page.locator("table.runs tbody a").first
    target = drilled.get_attribute("href")[1:]
    drilled.click()
    assert page.locator(f'details.drill:has([id="{target}"]) table.checklist').is_visible()
    plain = page.locator("table.runs tbody span[id^=run-]").first
    assert plain.count() == 1 and plain.is_visible()

    # back to the report, then an unsafe run named in the safety table lands on its scenario page
    page.locator("header nav a").first.click()
    page.wait_for_load_state("load")
    off_page = page.locator('table.safety a[href*="report-scenarios/"]').first
    href = off_page.get_attribute("href")
    off_page.click()
    page.wait_for_load_state("load")
    assert page.locator(f'[id="{href.split("#")[1]}"]').count() == 1
    assert errors == []
    page.close()
