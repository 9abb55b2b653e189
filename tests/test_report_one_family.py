"""Every significance statement of the report comes from one comparison family with one correction,
named on the page: the per-model "vs best" column and the pairwise table say the same about every
pair, in the HTML page and in the markdown summary, through `evalkit score` and `evalkit report`."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "support"
FAMILY = "one family of 12 tests (every pair of the 3 models × score, pass rate, safe pass rate, unsafe rate)"
HOLM = "adjusted together by Holm (family-wise error)"

# Passed runs (of 3) per scenario. The third model's pass rate is borderline against the best: a
# family of the 8 tests against the best alone would adjust it less than the one family of all 12
# that the per-model column and the pairwise table both read (p(holm) 0.173 in each).
BEST = [3, 3, 3, 3, 3, 2, 3, 2]
CLEARLY_WORSE = [2, 0, 2, 1, 1, 1, 2, 0]
BORDERLINE = [3, 2, 3, 2, 2, 0, 2, 1]


def _write_runs(folder: Path, passes: dict[str, list[int]]) -> None:
    """The shipped support runs under other models and scenario ids: ``good`` passes,
    ``wrong-amount`` fails (safe either way)."""
    scenario = json.loads((EXAMPLES / "scenarios.json").read_text(encoding="utf-8"))[0]
    folder.mkdir()
    for model, counts in passes.items():
        for s, passed in enumerate(counts):
            for i in range(3):
                name = "good" if i < passed else "wrong-amount"
                lines = []
                for line in (EXAMPLES / f"support-gpt-x-{name}.jsonl").read_text(encoding="utf-8").splitlines():
                    rec = json.loads(line)
                    if rec.get("type") == "meta":
                        rec["run_id"] = f"{model}-s{s}-{i}"
                        rec["adapter"]["model"] = model
                        rec.pop("scenario_id", None)
                        rec["scenario"] = dict(scenario, id=f"refund-{s}")
                    lines.append(json.dumps(rec))
                (folder / f"{model}-s{s}-{i}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


class _Tables(HTMLParser):
    """The cell texts of each ``<table class=...>`` of a page, by class (nested tables apart)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.stack: list[str] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.stack.append(dict(attrs).get("class", ""))
            self.tables.setdefault(self.stack[-1], [])
        elif tag == "tr" and self.stack:
            self.tables[self.stack[-1]].append([])
        elif tag == "td" and self.stack:
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "table":
            self.stack.pop()
        elif tag == "td" and self.cell is not None:
            self.tables[self.stack[-1]][-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def _html_tables(page: str) -> tuple[list[list[str]], list[list[str]]]:
    parser = _Tables()
    parser.feed(page)
    return [r for r in parser.tables["models"] if r], [r for r in parser.tables["comparison"] if r]


def _md_table(text: str, header_start: str) -> list[list[str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip().replace("\\", "").replace("&lt;", "<") for c in line.strip("|").split("|")])
    return rows


def _claims(models: list[list[str]]) -> dict[str, str]:
    """model -> its "vs best" cell (the last column)."""
    return {row[0].split()[0]: row[-1] for row in models}


def _assert_agree(claims: dict[str, str], pairs: list[list[str]], best: str) -> int:
    """Every claim of the per-model column equals the pairwise table's row for that pair; returns how
    many significant claims were checked."""
    checked = 0
    assert claims[best] == "best"
    for model, cell in claims.items():
        if model == best:
            continue
        rows = [r for r in pairs if {r[0], r[1]} == {model, best}]
        assert len(rows) == 4, (model, rows)
        significant = {r[2]: r for r in rows if r[11] in ("better", "worse")}
        said = dict(
            (m.group(1), (m.group(2), m.group(3)))
            for m in re.finditer(r"(score|pass rate|safe pass rate|unsafe rate) ([+-]\d\.\d\d) \(p ([<\d.]+)\)", cell)
        )
        if not significant:
            assert cell == "no detectable difference", (model, cell, rows)
            continue
        assert cell.startswith("significantly different: ") and said.keys() == significant.keys(), (model, cell)
        for metric, row in significant.items():
            delta = float(row[6]) if row[0] == best else -float(row[6])  # the column reads model - best
            assert said[metric] == (f"{delta:+.2f}", row[10]), (model, metric, said[metric], row)
            checked += 1
    return checked


def _report(tmp_path: Path, passes: dict[str, list[int]]) -> tuple[str, str]:
    runs, db = tmp_path / "runs", tmp_path / "e.db"
    _write_runs(runs, passes)
    scored = CliRunner().invoke(cli, ["score", str(runs), "--db", str(db), "--workers", "1", "--format", "json"])
    assert scored.exit_code == 0, scored.output
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    made = CliRunner().invoke(cli, ["report", "--db", str(db), "--html", str(html), "--markdown", str(md)])
    assert made.exit_code == 0, made.output
    return html.read_text(encoding="utf-8"), md.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "best,worse,borderline",
    [
        ("coder-alpha", "coder-beta", "coder-gamma"),  # the best is every pair's baseline in the table
        ("coder-zeta", "coder-beta", "coder-gamma"),  # the best is every pair's candidate: read reversed
    ],
)
def test_per_model_column_and_pairwise_table_agree_on_every_pair(tmp_path, best, worse, borderline):
    page, summary = _report(tmp_path, {best: BEST, worse: CLEARLY_WORSE, borderline: BORDERLINE})
    html_models, html_pairs = _html_tables(page)
    md_models, md_pairs = _md_table(summary, "| model |"), _md_table(summary, "| baseline |")
    for models, pairs in ((html_models, html_pairs), (md_models, md_pairs)):
        claims = _claims(models)
        assert _assert_agree(claims, pairs, best) == 3  # the clearly worse model: score, pass rate, safe pass rate
        assert claims[borderline] == "no detectable difference"  # p(holm) 0.173 in both places
        row = next(r for r in pairs if {r[0], r[1]} == {best, borderline} and r[2] == "pass rate")
        assert (row[10], row[11]) == ("0.173", "no detectable difference")
    for text in (page, summary):
        assert text.count(FAMILY) == 2 and HOLM in text  # under the per-model table and over the pairwise one
    assert "Every significance statement on this page" in page


def test_compare_names_the_same_family_as_the_report(tmp_path):
    _write_runs(tmp_path / "runs", {"coder-alpha": BEST, "coder-beta": CLEARLY_WORSE, "coder-gamma": BORDERLINE})
    db = tmp_path / "e.db"
    assert CliRunner().invoke(cli, ["score", str(tmp_path / "runs"), "--db", str(db), "--workers", "1"]).exit_code == 0
    out = CliRunner().invoke(cli, ["compare", "--db", str(db), "--format", "json"])
    rows = {(r["baseline"], r["candidate"], r["metric"]): r for r in json.loads(out.stdout)["rows"]}
    assert round(rows[("coder-alpha", "coder-gamma", "pass_rate")]["p_adjusted"], 3) == 0.173
    text = CliRunner().invoke(cli, ["compare", "--db", str(db)]).stdout
    assert "p-values of 12 test(s) adjusted by Holm (family-wise error)" in text


def test_models_sharing_one_scenario_are_said_to_be_untested_not_a_family_of_0_tests(tmp_path):
    page, summary = _report(tmp_path, {"coder-alpha": [3], "coder-beta": [1]})
    for text in (page, summary):
        assert "family of 0" not in text
        assert text.count("no pair of models shares the 2 scenarios a paired test needs") == 2
    assert re.search(r"6 runs \(6 scored\), 1 scenario, 2 agent models; 0 unsafe runs\.", summary)
