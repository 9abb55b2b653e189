"""Agreement statistics that cannot be computed from the data are n/a with the reason, by one rule for
every statistic (one rated item, no variation, no item rated twice), through `evalkit annotations
import` and `evalkit audit`, in the JSON and in the table."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from evalkit.agreement.stats import registry
from evalkit.agreement.stats.stat import NO_ITEMS, NO_VARIATION, ONE_ITEM
from evalkit.cli import cli

# every statistic of the raters table that corrects for chance (percent agreement is a plain share)
BEYOND_CHANCE = ("cohen_kappa", "weighted_kappa", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1")
TABLE_LABELS = ("Cohen κ", "weighted κ", "Fleiss κ", "Krippendorff α", "Gwet AC1")


def _audit(tmp_path, rows: list[tuple[str, str, str, object]], dimension: str = "safety") -> tuple[dict, str]:
    """Import ``rows`` (item, rater, kind, value) of ``dimension``; the audit as JSON and as a table.
    ``safety`` has a scale in the shipped configs/pairings.toml (0..3); ``tone`` has none."""
    csv = tmp_path / "ratings.csv"
    csv.write_text(
        "item_id,rater,rater_kind,dimension,value\n" + "".join(f"{i},{r},{k},{dimension},{v}\n" for i, r, k, v in rows),
        encoding="utf-8",
    )
    db = str(tmp_path / "e.db")
    imported = CliRunner().invoke(cli, ["annotations", "import", str(csv), "--db", db])
    assert imported.exit_code == 0, imported.output
    as_json = CliRunner().invoke(cli, ["audit", "--db", db, "--format", "json", "--resamples", "0"])
    assert as_json.exit_code == 0, as_json.output
    table = CliRunner().invoke(cli, ["audit", "--db", db, "--resamples", "0"])
    assert table.exit_code == 0, table.output
    return json.loads(as_json.stdout), table.stdout


def _raters(audit: dict, dimension: str = "safety") -> dict:
    (entry,) = [e for e in audit["raters"] if e["dimension"] == dimension]
    return entry


def _raters_row(text: str, dimension: str = "safety") -> tuple[dict[str, str], dict[str, str]]:
    """The raters table's safety row as {column label: cell} and its notes as {number: reason}."""
    lines = text[text.index("== Raters") :].splitlines()
    header = lines[1]
    starts = [m.start() for m in re.finditer(r"(?:(?<=  )|^)\S", header)]
    row = next(line for line in lines if line.startswith(dimension))

    def cells(line: str) -> list[str]:
        return [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None])]

    notes = dict(re.findall(r"^note: \((\d+)\) (.*)$", "\n".join(lines[2:]), re.M))
    return dict(zip(cells(header), cells(row))), notes


def _all_na_with(cells: dict[str, str], notes: dict[str, str], reason: str) -> None:
    for label in TABLE_LABELS:
        m = re.fullmatch(r"n/a \((\d+)\)", cells[label])
        assert m and notes[m.group(1)] == reason, (label, cells[label], notes)


def test_one_rated_item_makes_every_chance_corrected_statistic_na_with_one_reason(tmp_path):
    audit, text = _audit(tmp_path, [("run-1", "alice", "human", 1), ("run-1", "gpt", "judge", 3)])
    entry = _raters(audit)
    assert entry["n_items"] == 1
    for name in BEYOND_CHANCE:  # Fleiss -1, alpha 0, AC1 -0.2 would be artefacts of a single item
        assert entry[name] == {"value": None, "reason": ONE_ITEM}, name
    assert entry["pairwise_cohen_kappa"]["pairs"][0] | {"raters": None} == {
        "raters": None,
        "n": 1,
        "value": None,
        "reason": ONE_ITEM,
    }
    assert entry["percent_agreement"] == {"value": 0.0, "reason": None}  # a share of one item is still a share
    cells, notes = _raters_row(text)
    _all_na_with(cells, notes, ONE_ITEM)
    assert cells["pairwise agreement"] == "0.000"
    assert "-1.000" not in text and "-0.200" not in text


def test_two_rated_items_give_every_statistic_a_value(tmp_path):
    rows = [("run-1", "alice", "human", 1), ("run-1", "gpt", "judge", 1)]
    rows += [("run-2", "alice", "human", 2), ("run-2", "gpt", "judge", 3)]
    entry = _raters(_audit(tmp_path, rows)[0])
    assert entry["n_items"] == 2
    for name in ("percent_agreement", *BEYOND_CHANCE):
        assert entry[name]["value"] is not None and entry[name]["reason"] is None, (name, entry[name])
    assert entry["percent_agreement"]["value"] == 0.5


SAME_LABEL = [(f"run-{i}", rater, kind, 2) for i in range(4) for rater, kind in (("alice", "human"), ("gpt", "judge"))]


def test_no_variation_makes_every_statistic_that_needs_a_spread_na_with_one_reason(tmp_path):
    audit, text = _audit(tmp_path, SAME_LABEL, "tone")
    entry = _raters(audit, "tone")
    assert entry["labels"] == [2]
    for name in BEYOND_CHANCE:  # the scale seen is the one label: AC1's chance term is undefined too
        assert entry[name] == {"value": None, "reason": NO_VARIATION}, name
    assert entry["percent_agreement"]["value"] == 1.0
    cells, notes = _raters_row(text, "tone")
    _all_na_with(cells, notes, NO_VARIATION)


def test_no_variation_on_a_configured_scale_keeps_gwet_ac1(tmp_path):
    entry = _raters(_audit(tmp_path, SAME_LABEL)[0])
    assert entry["labels"] == [0, 1, 2, 3]
    for name in ("cohen_kappa", "weighted_kappa", "fleiss_kappa", "krippendorff_alpha"):
        assert entry[name] == {"value": None, "reason": NO_VARIATION}, name
    assert entry["gwet_ac1"] == {"value": 1.0, "reason": None}  # AC1 is defined for constant raters: its point


def test_pairings_without_a_shared_item_give_every_statistic_one_reason(tmp_path):
    audit, text = _audit(tmp_path, [("run-1", "alice", "human", 1), ("run-1", "gpt", "judge", 3)])
    for pairing in audit["pairings"]:
        assert pairing["n"] == 0
        stats = {s.name: pairing[s.name] for s in registry.for_pairs()}
        assert all(st["value"] is None for st in stats.values())
        undefined = {k: v["reason"] for k, v in stats.items() if registry.applies(v)}
        assert len(undefined) >= 4 and set(undefined.values()) == {NO_ITEMS}, (pairing["pairing"], undefined)
    assert "at least two pairs" not in text and "both ratings" not in text
