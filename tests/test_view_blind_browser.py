"""The blind Runs list in a real browser (Playwright driving Debian's chromium, as
tests/test_view_browser.py does) against `evalkit view` started here: where `/` lands, no
mechanical verdict and no judge disagreement is shown, offered as a filter or as a sort; *Show the
scores* reveals them."""

from __future__ import annotations

import re
from pathlib import Path

import view_helpers as vh
from test_view_browser import browser  # noqa: F401 (the fixture)
from test_view_served import served

judged, db = vh.judged_fixtures("view-blind-browser")
VERDICT_COLUMNS = ("outcome", "scalar", "unsafe", "disagreements")


def test_the_blind_runs_list_shows_no_verdict(db, browser):  # noqa: F811
    with served(db, "--reviewer", "ann") as (port, _line, _pid):
        base = f"http://127.0.0.1:{port}"
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(base + "/")
        assert page.url == base + "/runs"
        headers = [h.strip().rstrip("▲▼ ").strip() for h in page.locator("#runs thead th").all_inner_texts()]
        assert headers == ["run", "scenario", "model", "status", "reviewed"]
        body = page.locator("#runs tbody").inner_text()
        assert "a320-gemini-2.5-flash-battery-off" in body
        assert not re.search(r"\b(pass|fail|unsafe)\b", body)  # no outcome, no safety verdict
        assert not re.search(r"\b0\.\d+\b", body)  # no scalar
        for name in ("outcome", "unsafe", "disagrees"):
            assert page.locator(f"select[name='{name}']").count() == 0
        assert page.locator("a[href*='sort=scalar'], a[href*='sort=disagreements']").count() == 0
        page.screenshot(path=str(Path(db).parent / "runs-blind.png"), full_page=True)

        page.click("#reveal")  # Show the scores
        headers = [h.strip().rstrip("▲▼ ").strip() for h in page.locator("#runs thead th").all_inner_texts()]
        assert all(c in headers for c in VERDICT_COLUMNS)
        assert "unsafe" in page.locator("#runs tbody").inner_text()
        page.close()
