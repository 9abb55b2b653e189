"""Workers ship finished pieces (output bytes, database rows by table, Parquet rows, an aggregate
partial) and the parent only writes: the output, the database and the Parquet files are byte for
byte what one process writing card by card gives, on a corpus with warnings, an error, a run_id
read twice and a recorder that crashed mid-line."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest
from cli_process_helpers import evalkit_then_print
from click.testing import CliRunner
from engine_helpers import make_corpus

from evalkit.aggregate.groups import Aggregator, _merge_state
from evalkit.cli import cli
from evalkit.db.scores import Store, batch_rows
from evalkit.engines.job import ScoredBatch, ScoreJob, score_batch
from evalkit.engines.pieces import BatchPieces
from evalkit.engines.pipeline import score_files
from evalkit.engines.worker import score_one
from evalkit.errors import InputError
from evalkit.present.score_output import ScoreWriter

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("runs", "scorecards", "commands", "bundles")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"), n=140)  # 143 files: three batches of 64


def cli_score(*args):
    result = CliRunner().invoke(cli, ["score", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def card_by_card(corpus, fmt, aggregate=False):
    """The reference: every card rendered and aggregated one by one in this process."""
    out, err = io.StringIO(), []
    writer = ScoreWriter(out, fmt, aggregate_only=aggregate, width=120)
    agg = Aggregator(warn=err.append)
    for item in score_files([corpus], warn=err.append):
        if isinstance(item, InputError):
            err.append(f"error: {item}")
            continue
        if not aggregate:
            writer.card(item)
        agg.add(item)
    writer.finish(agg.result())
    return out.getvalue(), err


@pytest.mark.parametrize("fmt", ["table", "json", "jsonl", "csv", "markdown"])
def test_every_format_is_byte_identical_with_two_workers(corpus, fmt, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    one = cli_score(corpus, "--format", fmt, "--no-db", "--workers", "1")
    two = cli_score(corpus, "--format", fmt, "--no-db", "--workers", "2")
    assert one == two and one[0] == 1
    reference, warnings = card_by_card(corpus, fmt)
    assert one[1] == reference
    assert "run-0003a-half.jsonl:" in one[2] and "run-0030a-bad.jsonl:4" in one[2] and "already read from" in one[2]
    assert all(line in one[2] for line in warnings)


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "table", "markdown"])
def test_aggregates_are_byte_identical_with_two_workers(corpus, fmt, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    one = cli_score(corpus, "--format", fmt, "--aggregate", "--no-db", "--workers", "1")
    two = cli_score(corpus, "--format", fmt, "--aggregate", "--no-db", "--workers", "2", "--include-errors")
    assert one[1] != two[1]  # provider errors counted: the partials are counted the parent's way
    two = cli_score(corpus, "--format", fmt, "--aggregate", "--no-db", "--workers", "2")
    assert one == two and one[1] == card_by_card(corpus, fmt, aggregate=True)[0]


def dump(path):
    conn = sqlite3.connect(path)
    return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}


def test_database_is_identical_row_for_row_with_two_workers(corpus, tmp_path):
    one = cli_score(corpus, "--format", "jsonl", "--db", tmp_path / "one.db", "--workers", "1")
    two = cli_score(corpus, "--format", "jsonl", "--db", tmp_path / "two.db", "--workers", "2")
    assert one == two
    rows = dump(tmp_path / "one.db")
    assert rows == dump(tmp_path / "two.db") and len(rows["runs"]) == 141


def test_parquet_files_are_byte_identical_with_two_workers(corpus, tmp_path):
    pytest.importorskip("pyarrow")
    for w in ("1", "2"):
        cli_score(corpus, "--no-db", "--aggregate", "--workers", w, "--parquet", tmp_path / w)
    files = {w: sorted(p.relative_to(tmp_path / w) for p in (tmp_path / w).rglob("*.parquet")) for w in ("1", "2")}
    assert files["1"] == files["2"] and files["1"]
    assert all((tmp_path / "1" / f).read_bytes() == (tmp_path / "2" / f).read_bytes() for f in files["1"])


def test_a_run_id_read_twice_keeps_only_the_later_cards_commands(corpus, tmp_path):
    """The earlier card had more commands than the later one: none of its rows is left behind,
    wherever the transaction and batch boundaries fall."""
    job = ScoreJob(db_rows=True)
    first = score_one(job, str(corpus / "part-0" / "run-0001.jsonl")).rows
    later = score_one(job, str(corpus / "part-2" / "run-0055a-dup.jsonl")).rows
    other = score_one(job, str(corpus / "part-0" / "run-0002.jsonl")).rows
    assert len(first["commands"]) > len(later["commands"])
    ways = {
        "one transaction": lambda s: s.save_rows([first, other, later]),
        "one by one": lambda s: [s.save_rows([r]) for r in (first, other, later)],
        "two batches": lambda s: s.save_batches([batch_rows([first, other]), batch_rows([later])]),
    }
    dumps = []
    for name, save in ways.items():
        with Store(tmp_path / f"{name}.db") as store:
            save(store)
        dumps.append(dump(tmp_path / f"{name}.db"))
    commands = [r for r in dumps[0]["commands"] if r[0] == "run-0001"]
    assert len(commands) == len(later["commands"]) and all(d == dumps[0] for d in dumps)


def test_workers_send_pieces_not_cards(corpus):
    files = sorted(str(p) for p in (corpus / "part-1").glob("*.jsonl"))[:6]
    (batch,) = score_batch(ScoreJob(output_format="jsonl", db_rows=True, encoding="utf-8"), files)
    assert isinstance(batch, ScoredBatch) and batch.paths == files  # one object for the batch, no card
    good = [i for i in range(len(files)) if i not in batch.errors]
    assert all(batch.scenarios[i] is not None and batch.run_ids[i] is not None for i in good)
    assert len(set(map(id, filter(None, batch.scenarios)))) == len(set(filter(None, batch.scenarios)))  # pickled once
    pieces = batch.pieces
    assert isinstance(pieces, BatchPieces) and isinstance(pieces.output, bytes) and pieces.count == len(good)
    assert pieces.output.count(b"\n") == len(good) and len(pieces.rows.run_ids) == len(good)


def test_text_goes_as_text_where_the_stream_takes_no_bytes(corpus):
    assert ScoreWriter(io.StringIO(), "jsonl").encoding is None
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    assert ScoreWriter(stream, "jsonl").encoding == "utf-8"
    assert ScoreWriter(io.TextIOWrapper(io.BytesIO(), encoding="latin-1"), "jsonl").encoding is None


def runs_of(corpus):
    from evalkit.aggregate.groups import RunSummary

    return [RunSummary.of(c) for c in score_files([corpus]) if not isinstance(c, InputError)]


@pytest.mark.parametrize("include_errors", [False, True])
def test_partials_merged_in_order_give_the_same_aggregates(corpus, include_errors):
    runs = runs_of(corpus)
    runs = runs + runs[:10]  # run_ids read again in a later partial replace the earlier runs
    whole = Aggregator(include_errors)
    for run in runs:
        whole.add(run)
    merged = Aggregator(include_errors)
    for i in range(0, len(runs), 7):
        part = Aggregator(include_errors)
        for run in runs[i : i + 7]:
            part.add(run)
        merged.merge(part.partial())
    assert merged.result() == whole.result()
    with pytest.raises(ValueError):
        Aggregator(not include_errors).merge(part.partial())


def test_merging_is_generic_over_the_accumulators_fields():
    class Inner:
        __slots__ = ("count", "sums")

        def __init__(self, count, sums):
            self.count, self.sums = count, sums

    class Outer:
        __slots__ = ("n", "seen", "inner")

        def __init__(self, n, seen, inner):
            self.n, self.seen, self.inner = n, seen, inner

    a, b = Outer(2, {"x": 1}, Inner(1, {4: 3})), Outer(3, {"x": 2, "y": 1}, Inner(2, {4: -3, 8: 1}))
    _merge_state(a, b)
    assert (a.n, a.seen, a.inner.count, a.inner.sums) == (5, {"x": 3, "y": 1}, 3, {4: 0, 8: 1})

    class Floats:
        __slots__ = ("mean",)

        def __init__(self, mean):
            self.mean = mean

    with pytest.raises(TypeError, match="exactly"):
        _merge_state(Floats(0.1), Floats(0.2))


def test_the_parent_loads_no_card_model_with_workers(corpus):
    models = ("evalkit.scoring.scorecard", "evalkit.trajectory.records", "pydantic", "pydantic_core")
    args = ["score", corpus, "--format", "jsonl", "--workers", "2", "--no-db"]
    done = evalkit_then_print(f"sorted(m for m in {models} if m in sys.modules)", *args)
    assert done.stderr.strip().splitlines()[-1] == "[]"
    assert done.stdout.count("\n") == 142  # 143 files, one bad


def test_runs_merged_without_their_groups_give_the_same_aggregates_however_the_merges_mix():
    from dataclasses import replace

    from evalkit.aggregate.groups import AggregatePartial, RunSummary, _fields

    runs = [
        RunSummary(f"s{i % 4}", f"m{i % 3}", "scored", (i % 5) / 5, 0.5, None, 1.0, i % 2 == 0, i % 7 == 0, f"r{i}")
        for i in range(60)
    ]
    runs += [replace(run, scalar=0.25) for run in runs[:6]]  # read again: replaces the earlier runs
    whole = Aggregator()
    for run in runs:
        whole.add(run)
    merged = Aggregator()
    for i in range(0, len(runs), 6):
        part = Aggregator()
        for run in runs[i : i + 6]:
            part.add(run)
        if i % 18 == 12:  # the groups sent: the runs merged so far are added to theirs first
            merged.merge(part.partial(sparse=False))
        else:  # the runs alone: kept aside until a result works them in (or anything else needs them)
            done = part.partial(sparse=False)
            merged.merge(AggregatePartial({r.run_id: _fields(r) for r in runs[i : i + 6]}, None, done.scenarios, False))
        if i == 24:
            assert merged.result() == merged.result()  # a result leaves the runs kept aside as they are
    assert merged.result() == merged.result() == whole.result()
    shown = merged.result(errors=False)
    merged.add_errors(shown, ["score_mean"])
    expected = whole.result(errors=False)
    whole.add_errors(expected, ["score_mean"])
    assert shown == expected
