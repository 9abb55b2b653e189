"""How `evalkit score --aggregate` shows long pass^k lists: a table cell stays readable for a group of
many rollouts, while csv and json keep every value."""

import csv
import io
import json

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.present.score_output import PASS_HAT_K_SHOWN, fmt

EXAMPLE = "examples/support/support-gpt-x-good.jsonl"


def _copies(tmp_path, n):
    lines = open(EXAMPLE, encoding="utf-8").read().splitlines()
    for i in range(n):
        out = []
        for line in lines:
            rec = json.loads(line)
            if rec.get("type") == "meta":
                rec["run_id"] = f"{rec['run_id']}-{i:03d}"
            out.append(json.dumps(rec))
        (tmp_path / f"run{i:03d}.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    return str(tmp_path)


def _score(*args):
    result = CliRunner().invoke(cli, ["score", "--no-db", "--workers", "1", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_short_pass_hat_k_list_is_shown_whole():
    assert fmt([1.0, 0.5, 0.25]) == "1.000 0.500 0.250"
    assert fmt([]) == "-"


def test_a_long_pass_hat_k_list_shows_the_first_values_and_says_how_many_more():
    values = [1.0 / (k + 1) for k in range(20)]
    cell = fmt(values)
    assert cell.split(" +")[0].split() == [f"{v:.3f}" for v in values[:PASS_HAT_K_SHOWN]]
    assert cell.endswith(f" +{20 - PASS_HAT_K_SHOWN} more (csv/json)")


def test_twenty_rollouts_table_is_cut_csv_and_json_keep_every_value(tmp_path):
    runs = _copies(tmp_path, 20)
    table = _score(runs, "--aggregate", "--wide")  # the default view leaves pass^k out to fit 120 columns
    assert "+12 more (csv/json)" in table
    markdown = _score(runs, "--aggregate", "--format", "markdown")
    assert "+12 more (csv/json)" in markdown
    rows = list(csv.DictReader(io.StringIO(_score(runs, "--aggregate", "--format", "csv"))))
    assert len(rows[0]["pass_hat_k"].split(";")) == 20
    data = json.loads(_score(runs, "--aggregate", "--format", "json"))
    assert len(data["groups"][0]["pass_hat_k"]) == 20


def test_a_table_cut_to_a_width_shows_each_value_as_the_whole_table_does():
    # the cut table formats its cells column by column; with room for every column it must show
    # exactly what the table of every column (--wide) shows, whatever the values
    from evalkit.present.score_output import GROUP_PRIORITY, GROUP_TABLE_COLUMNS, _table

    odd = [0.5, -0.0, 0.0, 1.0, float("nan"), float("inf"), None, 1e-9, 0.9995]
    rows = []
    for i, value in enumerate(odd):
        row = {c: value for c in GROUP_TABLE_COLUMNS}
        row.update(
            scenario_id=["task\x1b[2J", "ok", "\u202eevil", "tab\there"][i % 4],
            model=f"m{i}",
            n=i,
            n_scored=i,
            small_n=i % 2 == 0,
            pass_hat_k=[value, 0.25] if value is not None else [],
            safe_pass_hat_k=[0.5] * (i + 7),
        )
        for c in GROUP_TABLE_COLUMNS:
            if c.endswith("_ci"):
                row[c] = None if value is None else [value, 1.0]
        rows.append(row)
    rows.append({**rows[0], "pass_rate_ci": [1, 0.5], "score_mean_ci": None, "coverage_mean": 1})
    cut = _table(GROUP_TABLE_COLUMNS, rows, GROUP_PRIORITY, 10_000)
    assert list(cut.headers) == list(GROUP_TABLE_COLUMNS)
    assert cut.text_lines() == _table(GROUP_TABLE_COLUMNS, rows, GROUP_PRIORITY, None).text_lines()
    assert "task\\x1b[2J" in cut.text_lines()[2] and "\\u202eevil" in cut.text_lines()[4]


def test_the_markdown_summary_footnote_renders_as_written():
    """The job summary's footnote is one emphasis whose text keeps its underscores and asterisk: a
    CommonMark renderer (GitHub's) would otherwise pair ``*_ci``'s underscore with the closing one
    and print ``_provider_error ... *ci = ...``."""
    markdown = _score("examples/support", "--aggregate", "--format", "markdown")
    (footnote,) = [line for line in markdown.splitlines() if "excluded from means" in line]
    text = (
        "provider_error runs excluded from means; *_ci = 95% interval (per group over its runs, per model "
        "clustered by scenario; - when it needs 2 runs / 2 scenarios); small_n = fewer than 3 scored runs."
    )
    assert footnote == "_" + text.replace("_", "\\_").replace("*", "\\*") + "_"
    markdown_it = pytest.importorskip("markdown_it")
    assert markdown_it.MarkdownIt("commonmark").render(footnote) == f"<p><em>{text}</em></p>\n"
