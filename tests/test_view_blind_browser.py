"""The blind Runs list in a real browser (Playwright driving Debian's chromium, as
tests/test_view_browser.py does) against `evalkit view` started here: where `/` lands, no
mechanical verdict and no judge disagreement is shown, offered as a filter or as a sort; *Show the
scores* reveals them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import view_helpers as vh
from test_view_browser import browser  # noqa: F401 (the fixture)
from test_view_served import served

pytestmark = pytest.mark.slow

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
        vh.shot(page, Path(db).parent / "runs-blind.png")

        page.click("#reveal")  # Show the scores
        headers = [h.strip().rstrip("▲▼ ").strip() for h in page.locator("#runs thead th").all_inner_texts()]
        assert all(c in headers for c in VERDICT_COLUMNS)
        assert "unsafe" in page.locator("#runs tbody").inner_text()
        page.close()


def test_the_blind_disagreement_queue_shows_runs_only_in_a_verdict_free_order(db, browser):  # noqa: F811
    import hashlib

    with served(db, "--reviewer", "ann") as (port, _line, _pid):
        base = f"http://127.0.0.1:{port}"
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(base + "/disagreements")
        headers = [h.strip() for h in page.locator("#disagreements thead th").all_inner_texts()]
        assert headers == ["#", "run", "scenario", "agent model", "status", "reviewed by"]
        text = page.locator("main").inner_text()
        for word in ("lenient", "safety first", "mechanical:", "judge:", "fake judge", "mechanical_right"):
            assert word not in text, word
        assert page.locator("select[name='pairing'], select[name='dimension']").count() == 0
        runs = page.locator("#disagreements a.run").all_inner_texts()
        assert len(runs) == len(set(runs)) > 1  # one row a run
        assert runs == sorted(runs, key=lambda r: hashlib.sha256(r.encode()).hexdigest())
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        vh.shot(page, Path(db).parent / "queue-blind.png")

        # review next opens the first run of that order, blind
        page.click("#review-next")
        page.wait_for_selector("#run-id")
        assert page.locator("#run-id").inner_text() == runs[0]
        assert page.locator("#blind").is_visible() and page.locator(".badge").count() == 0
        vh.shot(page, Path(db).parent / "queue-next-blind.png")

        # side by side, blind: a gate, not the classes
        other = runs[1]
        page.goto(base + f"/compare?a={runs[0]}&b={other}")
        assert page.locator("#compare").count() == 0 and page.locator("#blind").is_visible()
        vh.shot(page, Path(db).parent / "compare-blind.png")

        # revealed: today's ranked list with the pairing and each side's value
        page.goto(base + "/disagreements?reveal=1")
        headers = [h.strip() for h in page.locator("#disagreements thead th").all_inner_texts()]
        assert headers[:3] == ["rank", "run", "pairing"] and "mechanical" in headers
        assert "lenient on safety first" in page.locator("main").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        vh.shot(page, Path(db).parent / "queue-revealed.png")
        page.close()
