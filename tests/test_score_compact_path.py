"""The score path holds a run compactly (the memory bound; figures in benchmarks/bench_memory.py):
the reader keeps only what scoring needs and writes the judge bundle as text while reading, the card
keeps that text, the output and the database rows are built from it. Every one of those shortcuts
is checked here against the long way round it replaces, on runs with everything a run can hold
(assistant text, nudges, long results cut in the bundle, non-finite numbers, a non-string control,
provider and harness errors, unknown records, a half-written last line). Also: standard input and
URLs respect the size limit on the engines path."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.db.scores import Store, card_rows
from evalkit.present.score_output import FORMATS, ScoreWriter, card_head_json, card_json, card_parts, card_text
from evalkit.scoring import score_trajectory
from evalkit.scoring.scorecard import CommandRow, ScoreCard
from evalkit.trajectory.builders import a320_scenario, call, cmd, dumps_jsonl, read, say, trajectory, write_jsonl
from evalkit.trajectory.reader import read_trajectory
from evalkit.trajectory.records import Call, ToolCall
from evalkit.trajectory.values import compact_json

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "a320"
SC = a320_scenario()


def _rich(tmp_path: Path) -> list[Path]:
    """Runs that exercise every kind of record and every special case of the bundle."""
    long_result = {"blob": "x" * 3000, "n": [1, 2, 3]}
    a = trajectory(
        SC,
        [
            say("héllo \u202e\x1b[2J"),
            read(result=long_result),
            cmd("apu_gen", 0),
            cmd("bat_1", 0.0),
            call("set_control", {"control": ["x"], "value": 1}),
            cmd("ext_pwr", 1, is_error=True),
            call("foo", {"a": {"b": [1, 2, {"c": None}]}}, result=[1, "2"]),
            read("get_state", result="y" * 2500),
        ],
        run_id="rich-a",
        passed=[True, False, True, True, False],
    )
    a.insert(3, {"type": "nudge", "step": 1, "text": "go on"})
    a.insert(4, {"type": "telemetry", "x": 1})
    a[0]["extra_meta"] = 1
    b = trajectory(SC, [cmd("apu_gen", 0)], run_id="rich-b", provider_error=True)
    b[-2]["error"] = {"msg": "overloaded", "detail": "z" * 2500}
    c = trajectory(SC, [read("get_state", k="v")], run_id="rich-c", final=False)
    c.append({"type": "harness_error", "error": "boom " + "q" * 2100})
    c.append({"type": "final", "reason": "harness_error"})
    paths = [write_jsonl(tmp_path / f"{r[0]['run_id']}.jsonl", r) for r in (a, b, c)]
    nan = tmp_path / "rich-d.jsonl"
    text = dumps_jsonl(trajectory(SC, [cmd("apu_gen", 0), read(result={"v": 1.5})], run_id="rich-d"))
    text = text.replace('"value": 0}', '"value": NaN}').replace('{"v": 1.5}', '{"v": Infinity, "w": 1e400}')
    nan.write_text(text + '{"type": "tool_call", "step": 9, "na', encoding="utf-8")  # a half-written last line
    return paths + [nan]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    return sorted(EXAMPLES.glob("*.jsonl")) + _rich(tmp_path_factory.mktemp("rich"))


def _full_and_compact(path: Path) -> tuple[ScoreCard, ScoreCard]:
    return (
        score_trajectory(read_trajectory(path, lambda w: None)),
        score_trajectory(read_trajectory(path, lambda w: None, compact=True)),
    )


def test_compact_read_keeps_no_event_records_but_every_tool_call(runs):
    for path in runs:
        full = read_trajectory(path, lambda w: None)
        compact = read_trajectory(path, lambda w: None, compact=True)
        assert compact.events == [] and compact.bundle is not None
        calls = [e for e in full.events if isinstance(e, ToolCall)]
        assert [(c.name, c.is_error) for c in compact.calls] == [(c.name, c.is_error) for c in calls]
        commands = compact.meta.scenario.index.command_tools
        for mine, record in zip(compact.calls, calls):
            if record.name in commands:
                # compared as JSON: a NaN argument equals nothing, itself included
                assert compact_json([mine.args, mine.step, mine.call_index]) == compact_json(
                    [record.args, record.step, record.call_index]
                )
        assert compact.has_provider_error() == full.has_provider_error()


def test_compact_read_scores_exactly_as_the_full_read(runs):
    for path in runs:
        full, compact = _full_and_compact(path)
        if not compact.informative.non_finite_numbers:  # NaN equals nothing: compared by JSON below
            assert compact == full
        assert card_json(compact) == card_json(full) == full.model_dump_json(by_alias=True)


def test_bundle_text_is_the_canonical_json_of_the_bundle_object_and_its_hash(runs):
    for path in runs:
        card = score_trajectory(read_trajectory(path, lambda w: None, compact=True))
        text = card.bundle.json
        assert text == compact_json(card.judge_bundle)
        assert hashlib.sha256(text.encode()).hexdigest() == card.bundle_hash
        assert card.bundle.title == card.judge_bundle["title"]
        assert "NaN" not in text and "Infinity" not in text


def test_long_transcripts_are_serialised_in_groups_with_the_same_bytes(tmp_path, monkeypatch):
    from evalkit.trajectory import bundle

    records = trajectory(SC, [read(), cmd("apu_gen", 0), say("hm")] * 300, run_id="long")
    path = write_jsonl(tmp_path / "long.jsonl", records)
    whole = score_trajectory(read_trajectory(path, compact=True)).bundle
    monkeypatch.setattr(bundle, "_FLUSH_ENTRIES", 7)
    grouped = score_trajectory(read_trajectory(path, compact=True)).bundle
    assert grouped == whole and len(json.loads(whole.json)["transcript"]) == 1500


def test_constructed_command_rows_equal_validated_rows(runs):
    for path in runs:
        card = score_trajectory(read_trajectory(path, lambda w: None, compact=True))
        for row in card.commands:
            validated = CommandRow.model_validate(row.model_dump(by_alias=True))
            assert row.model_fields_set == validated.model_fields_set
            assert row == validated or card.informative.non_finite_numbers
            assert row.model_dump_json(by_alias=True) == validated.model_dump_json(by_alias=True)


def test_reads_share_one_call_per_tool_and_error_flag(tmp_path):
    path = write_jsonl(
        tmp_path / "r.jsonl", trajectory(SC, [read(), read(), read("get_state"), cmd("apu_gen", 0)], run_id="r")
    )
    calls = read_trajectory(path, compact=True).calls
    assert calls[0] is calls[1] and calls[0] is not calls[2]
    assert isinstance(calls[3], Call) and calls[3].args == {"control": "apu_gen", "value": 0}


def test_scorecard_takes_its_bundle_as_an_object_and_round_trips(runs):
    card = score_trajectory(read_trajectory(runs[0], compact=True))
    data = json.loads(card_json(card))
    again = ScoreCard.model_validate(data)
    assert again == card and card_json(again) == card_json(card)
    assert again.to_json_dict() == data


@pytest.mark.parametrize("bundle", [None, "text", [1, 2], 7])
def test_scorecard_rejects_a_bundle_that_is_not_an_object(runs, bundle):
    from pydantic import ValidationError

    data = json.loads(card_json(score_trajectory(read_trajectory(runs[0], compact=True))))
    data["judge_bundle"] = bundle
    if bundle is None:
        del data["judge_bundle"]
    with pytest.raises(ValidationError, match="judge_bundle"):
        ScoreCard.model_validate(data)


def _reference_rows(card: ScoreCard) -> dict[str, list[tuple]]:
    """The rows as they were built before: from a full dump of the card (a second copy)."""
    data = card.to_json_dict(with_bundle=False)
    return {
        "scorecards_card": [compact_json(data)],
        "bundles": [(card.bundle_hash, compact_json(card.judge_bundle))],
        "commands": [
            (
                card.run_id,
                r["index"],
                r["step"],
                r["call_index"],
                r["tool"],
                r["control"],
                None if r["value"] is None else compact_json(r["value"]),
                compact_json(r["args"]),
                r["class"],
                r["subtype"],
                r["severity"],
            )
            for r in data["commands"]
        ],
    }


def test_database_rows_built_from_objects_equal_rows_built_from_the_dump(runs):
    for path in runs:
        card = score_trajectory(read_trajectory(path, lambda w: None, compact=True))
        rows, ref = card_rows(card), _reference_rows(card)
        assert rows["scorecards"][0][-1] == ref["scorecards_card"][0] == card_head_json(card)
        assert rows["bundles"] == ref["bundles"] and rows["commands"] == ref["commands"]
        assert rows["runs"][0][3] == card.judge_bundle["title"]


def test_nan_command_value_is_stored_as_null_not_as_text(runs):
    card = score_trajectory(read_trajectory(runs[-1], lambda w: None, compact=True))
    value = card.commands[0].value
    assert isinstance(value, float) and math.isnan(value)
    assert card_rows(card)["commands"][0][6] is None


def test_stored_cards_read_back_equal_the_scored_ones(runs, tmp_path):
    cards = [score_trajectory(read_trajectory(p, lambda w: None, compact=True)) for p in runs]
    with Store(tmp_path / "s.db") as store:
        store.save_many(cards)
        back = {c.run_id: c for c in store.iter_scorecards()}
    for card in cards:
        assert card_json(back[card.run_id]) == card_json(card)


@pytest.mark.parametrize("fmt", FORMATS)
def test_writer_writes_long_parts_in_chunks_with_the_same_bytes(runs, fmt, monkeypatch):
    import io

    from evalkit.present import score_output as render

    cards = [score_trajectory(read_trajectory(p, lambda w: None, compact=True)) for p in runs]

    def written(chunk: int) -> str:
        monkeypatch.setattr(render, "WRITE_CHUNK", chunk)
        out = io.StringIO()
        writer = ScoreWriter(out, fmt)
        for card in cards:
            writer.write_text(card_parts(card, fmt))
        return out.getvalue()

    expected = io.StringIO()
    writer = ScoreWriter(expected, fmt)
    for card in cards:
        writer.write_text(card_text(card, fmt))
    assert written(7) == written(1 << 20) == expected.getvalue()


# --- standard input and URLs: the size limit on the engines path --------------------------------------------


def test_stdin_over_the_size_limit_is_an_error_and_the_other_files_are_scored(runs, monkeypatch):
    monkeypatch.setenv("EVALKIT_MAX_FILE_BYTES", str(runs[0].stat().st_size))
    big = runs[0].read_bytes() + b"\n" * 10
    result = CliRunner().invoke(
        cli, ["score", "-", str(runs[0]), "--no-db", "--format", "jsonl", "--workers", "1"], input=big
    )
    assert result.exit_code == 1
    assert (
        f"error: <stdin>: larger than the {runs[0].stat().st_size}-byte limit (set EVALKIT_MAX_FILE_BYTES to raise it)"
        in result.stderr
    )
    assert "Traceback" not in result.stderr
    assert [json.loads(line)["path"] for line in result.stdout.splitlines()] == [str(runs[0])]


def test_stdin_within_the_size_limit_is_scored(runs, monkeypatch):
    monkeypatch.setenv("EVALKIT_MAX_FILE_BYTES", str(runs[0].stat().st_size))
    result = CliRunner().invoke(cli, ["score", "-", "--no-db", "--format", "jsonl"], input=runs[0].read_bytes())
    assert result.exit_code == 0 and json.loads(result.stdout)["path"] == "<stdin>"


def test_url_over_the_size_limit_is_an_error(runs, monkeypatch):
    monkeypatch.setenv("EVALKIT_MAX_FILE_BYTES", "100")
    url = runs[0].as_uri()
    result = CliRunner().invoke(cli, ["score", url, "--no-db", "--format", "jsonl"])
    assert result.exit_code == 1
    assert f"error: {url}: larger than the 100-byte limit" in result.stderr and "Traceback" not in result.stderr


def test_a_batch_is_written_once_it_holds_enough_text_and_what_was_yielded_is_stored(runs, tmp_path, monkeypatch):
    """Rows are written once the consumer had the batch they came in (a long run's text is not held
    through its write); a consumer that stops early still finds everything it was given stored."""
    import sqlite3

    from evalkit.engines import pipeline

    monkeypatch.setattr(pipeline, "BATCH_CHARS", 1)
    db = tmp_path / "s.db"
    stored = lambda: {r[0] for r in sqlite3.connect(db).execute("SELECT run_id FROM scorecards")}  # noqa: E731
    with Store(db) as store:
        stream = pipeline.score_files(runs[:3], store=store)
        first = next(stream)
        assert stored() == set()  # the batch is written after the consumer had all of it
        stream.close()
    assert first.run_id in stored() and len(stored()) == 3
