"""`evalkit view` in a real browser: Playwright's sync API driving Debian's chromium (nothing is
downloaded; ``executable_path`` and the report tests' flags), against `evalkit view` started here on
127.0.0.1 on a free port over the bundled examples judged by the fake LLM server.

The auditor's path: the disagreement queue, one click to a run page showing its transcript, the
classes, the missing actions; a blind review in one form; the judge's rationale once answered; and
`evalkit audit` changed by it. Without chromium or Playwright the test skips and says why, unless
EVALKIT_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import view_helpers as vh
from report_browser import playwright_chromium

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser():
    yield from playwright_chromium()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(_server, tmp_path_factory):
    """`evalkit view` on a copy of the judged examples: (base url, database path)."""
    directory = tmp_path_factory.mktemp("view-browser")
    db = vh.copy_db(vh.judged_examples(directory, _server), directory)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalkit", "view", "--db", db, "--port", str(port), "--reviewer", "ann"],
        env=vh.env_with_checkout(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(base + "/runs", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                out, err = proc.communicate()
                pytest.fail(f"evalkit view did not start (exit {proc.returncode}): {err[-800:]}")
            time.sleep(0.2)
    yield base, db
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def audit_json(db: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "evalkit", "audit", "--db", db, "--format", "json", "--resamples", "0"],
        env=vh.env_with_checkout(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)


# what gives away a verdict: a command's class, a checklist result, a verdict on a disagreement (the
# ground truth's rationales and the rubric's anchors may say "failed" or "missing" of their own)
CLASS_WORDS = ("matched_required", "forbidden (", "extraneous", "unapproved", "repeat_of_required")
VERDICT_WORDS = (
    "hit by",
    "not done",
    "action missing",
    "actions missing",
    "action done",
    "mechanical_right",
    "judge_right",
    "disagree on",
)
VERDICT_MARKS = "#ground-truth .missing, #ground-truth .good, #ground-truth .bad"


def test_from_the_queue_to_a_blind_review_that_changes_the_audit(served, browser):  # judge before the browser loop
    base, db = served
    before = audit_json(db)
    assert before["counts"]["review_ratings"] == 0
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))

    page.goto(base + "/disagreements")
    # the blind order decides nothing: take the run with a missing action and a forbidden one
    first = page.locator("#disagreements a.run").filter(has_text="a320-gemini-2.5-flash-battery-off")
    run_id = first.inner_text()
    assert "fake judge" not in page.content()  # the queue is blind too
    first.click()  # one click: the run page
    page.wait_for_selector("#transcript")
    assert page.locator("#run-id").inner_text() == run_id

    # blind: the task, the transcript and the ground truth with its rules; no class, no verdict
    transcript = page.locator("#transcript").inner_text()
    assert "set_control" in transcript and "assistant" in transcript and "task" in transcript
    assert "exact: control and value" in page.locator("#ground-truth").inner_text()
    text = page.locator("main").inner_text()
    assert [w for w in CLASS_WORDS + VERDICT_WORDS if w in text] == []
    assert page.locator(".badge").count() == 0 and page.locator("select[name^='verdict.']").count() == 0
    assert page.locator(VERDICT_MARKS).count() == 0
    assert "done by" not in page.locator("#checklist thead").inner_text()
    assert "passed" not in page.locator("#end-state").inner_text()
    assert page.locator("#blind").is_visible() and page.locator("#judge").count() == 0
    vh.shot(page, "/tmp/view-blind-before.png")

    # a blind review in one form
    page.select_option("select[name='rating.outcome']", "fail")
    page.select_option("select[name='rating.safety']", "0")
    page.fill("textarea[name='note']", "battery 1 off </script> is dangerous")
    page.click("#save-review")
    page.wait_for_load_state()
    assert page.locator("#saved").count() == 1, page.content()[:800]
    assert "(blind)" in page.locator("#saved").inner_text()

    # answered: classes, the checklist's verdicts, the judge, the disagreements, and who is right?
    assert "fake judge" in page.locator("#judge").inner_text()
    assert page.locator("#transcript .badge").filter(has_text="matched_required").count() > 0
    assert page.locator("#checklist .missing").count() > 0  # the required actions no command took
    text = page.locator("main").inner_text()
    shown = ("matched_required", "forbidden (", "hit by", "not done", "action missing", "disagree on")
    assert [w for w in shown if w not in text] == []
    assert "done by" in page.locator("#checklist thead").inner_text()
    assert "passed" in page.locator("#end-state").inner_text()
    verdicts = page.locator("select[name^='verdict.']")
    assert verdicts.count() >= 1 and "mechanical_right" in verdicts.first.inner_text()
    pairing = verdicts.first.get_attribute("name").removeprefix("verdict.")
    vh.shot(page, "/tmp/view-blind-after.png")
    page.select_option(f"select[name='verdict.{pairing}']", "mechanical_right")
    page.click("#save-review")
    page.wait_for_load_state()
    assert "ann" in page.locator("#review-history").inner_text()

    after = audit_json(db)
    assert (after["counts"]["review_ratings"], after["counts"]["non_blind_review_ratings"]) == (2, 0)
    entry = next(e for e in after["adjudications"] if e["pairing"] == pairing)
    assert (entry["judge_errors"], entry["reviewers"]) == (1, ["ann"])
    assert problems == []
    assert all(u.startswith(base) for u in requests)  # nothing loaded from anywhere else
    page.close()
