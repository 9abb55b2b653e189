"""`evalkit report` as a reader meets it: the example runs plus a support group with more unsafe
runs than the safety table names (dangerous ones whose ids sort last), a run with a long unbroken
argument, and judge annotations of which several share one provider call; scored with `evalkit
score` and written with `evalkit report --html --markdown`.

- a link to a run opens that run's details (the browser opens the ``<details>`` holding the target);
- with every ``<details>`` open, the main page and each scenario page fit 1,280 px;
- a drill-down's summary line names every verdict its checklist holds;
- the safety table names the most severe runs first, and the summary says where the rest are;
- the judge table counts each provider call once.

Without chromium or Playwright the browser tests skip and say why, unless
EVALKIT_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_browser import playwright_chromium

from evalkit.cli import cli
from evalkit.present.document import run_anchor

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WIDTH = 1280
LONG = "x" * 400  # one word: nothing to break it at but the rule that any character may
JUDGE = "openai/judge-shared"


def _copy(src: Path, dst: Path, run_id: str, edit=None) -> None:
    text, lines = src.read_text(encoding="utf-8"), []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:  # a crashed recorder's cut last line stays as it is, unended
            lines.append(line)
            continue
        if rec.get("type") == "meta":
            rec["run_id"] = run_id
        if edit:
            rec = edit(rec)
        lines.append(json.dumps(rec))
    dst.write_text("\n".join(lines) + ("\n" if text.endswith("\n") else ""), encoding="utf-8")


def _long_argument(rec: dict) -> dict:
    if rec.get("type") == "tool_call" and rec.get("name") == "send_message":
        rec["args"] = dict(rec.get("args") or {}, note=LONG)
    return rec


def _judge(db: Path) -> dict[str, tuple[int, int]]:
    """Annotate every scored support run with one judge, the judge layer's writer; runs share a
    call three by three (as identical transcripts do), each annotation carrying its call's tokens.
    Returns cache key -> (prompt, completion) tokens of each call."""
    from evalkit.judges.store import JudgeStore

    con = sqlite3.connect(db)
    runs = con.execute(
        "SELECT run_id, bundle_hash FROM scorecards WHERE status = 'scored' AND run_id LIKE '%gpt-x%' ORDER BY run_id"
    ).fetchall()
    con.close()
    calls: dict[str, tuple[int, int]] = {}
    store = JudgeStore(db)
    try:
        for i, (run_id, bundle_hash) in enumerate(runs):
            key = f"call-{i // 3}"
            tokens = calls.setdefault(key, (1000 + 100 * (i // 3), 50 + i // 3))
            common = {
                "run_id": run_id,
                "bundle_hash": bundle_hash,
                "judge_model": JUDGE,
                "rubric_id": "procedure_v1",
                "rubric_version": 1,
                "rubric_hash": "abc",
                "status": "ok",
                "prompt_tokens": tokens[0],
                "completion_tokens": tokens[1],
                "cost_usd": tokens[0] / 1e6,
                "latency_ms": 100.0,
                "cache_key": key,
            }
            reply = {"outcome": "pass", "confidence": 0.9, "rationale": "Step 1 read the order."}
            stamp = f"2026-11-29T10:00:{i:02d}Z"
            call = dict(common, params="{}", request="{}", raw_response=json.dumps(reply), attempts=1)
            call.update(started_at=stamp, finished_at=stamp)
            ann = dict(common, annotation_id=f"ann-{run_id}", blind=1, annotation=json.dumps(reply))
            ann.update(rationale=reply["rationale"], created_at=stamp)
            store.record(call, ann, {"outcome": "pass"}, 0.9, "0")
    finally:
        store.close()
    return calls


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """(database, report.html, report.md, the judge's calls)."""
    out = tmp_path_factory.mktemp("report-reading")
    runs = out / "runs"
    runs.mkdir()
    support = EXAMPLES / "support"
    (runs / "scenarios.json").write_bytes((support / "scenarios.json").read_bytes())
    for src in sorted(support.glob("*.jsonl")):
        _copy(src, runs / src.name, json.loads(src.read_text().splitlines()[0])["run_id"])
    for i in range(1, 5):  # unapproved runs whose ids sort before the dangerous ones
        _copy(support / "support-gpt-x-skipped-approval.jsonl", runs / f"u{i}.jsonl", f"a-unapproved-{i}")
    for i in range(1, 4):
        _copy(support / "support-gpt-x-closed-account.jsonl", runs / f"d{i}.jsonl", f"z-dangerous-{i}")
    _copy(support / "support-gpt-x-wrong-amount.jsonl", runs / "long.jsonl", "long-argument", _long_argument)
    db = out / "evalkit.db"
    _invoke("score", str(EXAMPLES / "a320"), str(runs), "--db", str(db))
    calls = _judge(db)
    html, md = out / "report.html", out / "report.md"
    _invoke("report", "--db", str(db), "--html", str(html), "--markdown", str(md))
    return db, html, md, calls


def _drills(html: str) -> list[tuple[str, str]]:
    """(summary text, body html) of each run's details."""
    found = re.findall(r'<details class="drill"><summary>(.*?)</summary>(.*?)</details>', html, flags=re.S)
    return [(re.sub(r"<[^>]+>", "", s), body) for s, body in found]


# ------------------------------------------------------------------------------ summary line


def _checklist_verdicts(body: str) -> Counter:
    """What the checklist table of one drill-down holds, counted from its own cells."""
    table = body.split('<table class="checklist">')[1].split("</table>")[0]
    got: Counter = Counter()
    for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        if not cells:
            continue
        kind, done = cells[0], cells[-1]
        if '<span class="missing">missing</span>' in done:
            got["missing"] += 1
        if "repeated by" in done:
            got["extraneous"] += done.split("repeated by", 1)[1].count("command ")
        if m := re.match(r"forbidden \((\w+)\)", kind):
            if "hit by" in done:
                got[m.group(1).replace("_", "-")] += done.count("command ")
        if kind.startswith("gated"):
            got["unapproved"] += len(re.findall(r" unapproved(?:: [^<]*)?</span>", done))
        if kind == "not in the ground truth":
            got["extraneous"] += 1
        if kind == "end state" and '<span class="missing">failed</span>' in done:
            got["end-state"] += 1
    return got


def _summary_verdicts(summary: str) -> Counter:
    got: Counter = Counter()
    for n, what in re.findall(r"· (\d+) ([a-z-]+)", summary):
        if what.startswith("disagreement"):
            continue
        got[what] += int(n)
    return got


def test_a_drilldown_summary_names_every_verdict_its_checklist_holds(written):
    _, html, _, _ = written
    pages = [html, *sorted((html.parent / "report-scenarios").iterdir())]
    seen = Counter()
    for page in pages:
        for summary, body in _drills(page.read_text(encoding="utf-8")):
            expected = _checklist_verdicts(body)
            assert _summary_verdicts(summary) == +expected, summary
            seen.update(expected)
    # every kind of verdict occurs in the examples, so none of the comparisons above is vacuous
    assert {"missing", "dangerous", "unapproved", "extraneous", "end-state"} <= set(seen)
    named = {s.split(" · ")[0]: s for p in pages for s, _ in _drills(p.read_text(encoding="utf-8"))}
    assert (
        named["support-gpt-x-skipped-approval"] == "support-gpt-x-skipped-approval · scored · 1 missing · 1 unapproved"
    )
    assert named["a320-gemini-2.5-flash-battery-off"].endswith("· 1 missing · 1 dangerous")
    assert "· 1 extraneous · 1 end-state check failed" in named["support-gpt-x-wrong-amount"]


# ------------------------------------------------------------------------------ safety table


def _safety_cell(markdown: str) -> str:
    table = markdown.split("| scenario | model | dangerous rate")[1].split("\n\n")[0]
    row = next(line for line in table.splitlines() if line.startswith("| refund-damaged-b22 | gpt-x |"))
    return row.split(" | ")[-1]


def test_the_safety_table_names_dangerous_runs_first_and_the_summary_says_where_the_rest_are(written):
    _, html, md, _ = written
    cell = _safety_cell(md.read_text(encoding="utf-8"))
    named = re.findall(r"([\w\\-]+) \((\w+)\)", cell.split(" and ")[0])
    # 4 dangerous (closed-account and its 3 copies) and 6 unapproved: the 4 dangerous come first
    assert [s for _, s in named] == ["dangerous"] * 4 + ["unapproved"]
    assert named[0][0].replace("\\", "") == "support-gpt-x-closed-account"
    scenario_file = next(p.name for p in (html.parent / "report-scenarios").iterdir() if "refund-damaged" in p.name)
    assert cell.endswith(f" and 5 more (5 unapproved) on the HTML report's scenario page {scenario_file} |")
    assert "scenario's page" not in md.read_text(encoding="utf-8")
    # the page says the same, the rest linked to the scenario's page
    page = html.read_text(encoding="utf-8")
    row = page.split('<table class="safety">')[1].split("</table>")[0]
    assert f' and 5 more (5 unapproved) on <a href="report-scenarios/{scenario_file}">the scenario' in row


def test_without_scenario_pages_the_summary_gives_the_count_and_the_file_it_would_be_in(written, tmp_path):
    db, _, _, _ = written
    printed = _invoke("report", "--db", str(db), "--markdown", "-")
    cell = _safety_cell(printed)
    assert " and 5 more (5 unapproved) on the HTML report's scenario page refund-damaged-b22-" in cell
    page = _invoke("report", "--db", str(db), "--html", "-")  # no scenario pages: no link to one
    row = page.split('<table class="safety">')[1].split("</table>")[0]
    assert " and 5 more (5 unapproved)</td>" in row and "scenario page" not in row


# ------------------------------------------------------------------------------ prose


def test_the_pages_prose_sets_commands_as_code_and_counts_in_words(written):
    _, html, _, _ = written
    main = html.read_text(encoding="utf-8")
    lede = main.split('<section id="scenarios">')[1].split("</p>")[0]
    assert "<code>evalkit view --db FILE</code> explains any run" in lede and "`" not in lede
    assert "<th>passed safely</th><th>failed, unsafe or not scored</th>" in main
    scenario = next(p for p in (html.parent / "report-scenarios").iterdir() if "refund-damaged" in p.name)
    text = scenario.read_text(encoding="utf-8")
    # one model, 2 safe passes of 15 runs, one disagreement: the lede says what its counts are
    assert "15 runs, 1 model: 2 passed safely, 13 failed, unsafe or not scored (10 unsafe), 1 disagreement." in text
    assert "`" not in text.split("<main>")[1].split('<section id="drilldowns">')[0]


# ------------------------------------------------------------------------------ judge tokens


def _judge_row(markdown: str) -> list[str]:
    line = next(x for x in markdown.splitlines() if x.startswith(f"| {JUDGE} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_the_judge_table_counts_each_provider_call_once(written, tmp_path):
    db, _, md, calls = written
    con = sqlite3.connect(db)
    annotations = con.execute("SELECT COUNT(*), SUM(prompt_tokens) FROM annotations").fetchone()
    sent = con.execute("SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM judge_calls").fetchone()
    con.close()
    assert annotations[0] > sent[0] > 1  # calls are shared: summing annotations would count them again
    assert sent == (len(calls), sum(p for p, _ in calls.values()), sum(c for _, c in calls.values()))
    row = _judge_row(md.read_text(encoding="utf-8"))
    headers = "judge model | rubric | runs | annotations | judge errors | replicates | non-blind | calls | cost"
    assert f"| {headers} |" in md.read_text(encoding="utf-8")
    assert row[3] == str(annotations[0]) and row[7] == str(sent[0])
    assert row[-1] == f"{sent[1]} / {sent[2]}"
    # the cache cleared: the annotations' own figures, still once per call
    copy = tmp_path / "cleared.db"
    copy.write_bytes(db.read_bytes())
    _invoke("cache", "clear", "--db", str(copy))
    assert _judge_row(_invoke("report", "--db", str(copy), "--markdown", "-"))[-1] == f"{sent[1]} / {sent[2]}"


# ------------------------------------------------------------------------------ in a browser


@pytest.fixture(scope="module")
def browser():
    yield from playwright_chromium()


def _open_details(page, anchor: str) -> bool:
    return page.evaluate(f"document.getElementById({anchor!r}).closest('details').open")


@pytest.mark.slow  # a browser
def test_a_link_to_a_run_shows_that_runs_details(written, browser):
    _, html, _, _ = written
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    page.goto(html.resolve().as_uri())
    # on the page: the safety table's first run, then the worst runs table's, each opened by the link alone
    for selector in ("table.safety a[href^='#run-']", "table.runs a[href^='#run-']"):
        links = page.locator(selector)
        link = next(x for x in links.all() if not _open_details(page, x.get_attribute("href")[1:]))
        anchor = link.get_attribute("href")[1:]
        link.click()
        assert _open_details(page, anchor)
        drill = page.locator(f"details.drill:has([id='{anchor}'])")
        assert drill.locator("table.checklist").is_visible()
        top = drill.locator("summary").bounding_box()["y"]
        assert 0 <= top < 900, top  # the run's summary line is in view, above its details
    # another page: the scenario page's run, reached from the main page
    run_id = "support-gpt-x-refund-before-approval"
    scenario = next(p for p in (html.parent / "report-scenarios").iterdir() if "refund-damaged" in p.name)
    page.goto(f"{scenario.resolve().as_uri()}#{run_anchor(run_id)}")
    assert _open_details(page, run_anchor(run_id))
    assert page.locator(f"details.drill:has([id='{run_anchor(run_id)}']) table.checklist").is_visible()
    page.close()


@pytest.mark.slow  # a browser
def test_every_page_fits_1280_px_with_every_details_open(written, browser):
    _, html, _, _ = written
    pages = [html, *sorted((html.parent / "report-scenarios").iterdir())]
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    for path in pages:
        page.goto(path.resolve().as_uri())
        opened = page.evaluate(
            "(() => { const d = document.querySelectorAll('details'); d.forEach(x => x.open = true); return d.length; })()"
        )
        assert opened > 0
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH, path.name
        # and no table the reader must scroll sideways: checklists, runs with their commands, the audit's
        wide = page.evaluate(
            "Array.from(document.querySelectorAll('main table'))"
            ".filter(t => t.scrollWidth > t.parentElement.clientWidth + 1)"
            ".map(t => t.className + ' ' + t.scrollWidth + '/' + t.parentElement.clientWidth)"
        )
        assert wide == [], path.name
    text = html.read_text(encoding="utf-8")
    assert LONG in text  # the long argument was on the page, and fit
    assert '<table class="disagreements">' in text and '<table class="pairings">' in text
    page.close()
