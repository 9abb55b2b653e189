"""`evalkit import --workers N`: inputs converted in a process pool (the score engine's, map_local),
written by the parent alone in input order — the same files, ratings, database rows and messages as
one worker, a bad input still a one-line error that stops nothing.

The many-file corpora are the realistic ones: inspect_ai logs (copies of the session's real logs
under new eval ids, written by inspect_ai's own write_eval_log) and per-task openai-messages files.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import time
from pathlib import Path

import pytest
import tiny_task  # examples/inspect, put on sys.path by conftest.py
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.engines import local as local_engine
from evalkit.importers import FunctionImporter, import_files
from evalkit.importers import job as import_job

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TRANSCRIPTS = (FIXTURES / "openai_messages" / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()


@pytest.fixture(autouse=True)
def one_file_per_task(monkeypatch):
    """One input per pool task, so a dozen inputs are a dozen tasks and order across them is tested.
    Workers are forked as `evalkit import` forks them (its process has no other thread); the test
    process may hold the fake LLM server's thread, which would make the pool use a fork server whose
    workers import inspect_ai again (seconds each) — a start method, not what these tests are about."""
    monkeypatch.setattr(import_job, "TASK_FILES", 1)
    monkeypatch.setattr(local_engine, "_context", lambda: multiprocessing.get_context("fork"))


def messages_file(path: Path, task: int, bad_line: int | None = None) -> Path:
    """The fixture's three transcripts as task ``task``'s own file (ids and scenarios made unique)."""
    lines = []
    for n, text in enumerate(TRANSCRIPTS, 1):
        item = json.loads(text)
        item["id"] = f"{item['id']}-t{task:02d}"
        if "scenario_id" in item:
            item["scenario_id"] = f"{item['scenario_id']}-t{task:02d}"
        lines.append("{broken" if n == bad_line else json.dumps(item))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpora(inspect_logs, tmp_path_factory):
    root = tmp_path_factory.mktemp("import-corpora")
    logs = root / "inspect"
    logs.mkdir()
    for fmt in ("eval", "json"):
        tiny_task.write_copies(inspect_logs[fmt], logs, 3)
    names = sorted(p.name for p in logs.iterdir())
    bad_log = logs / (names[2][:-5] + "a-truncated.eval")  # sorts third of seven .eval logs
    bad_log.write_bytes((logs / names[0]).read_bytes()[:2000])
    messages = root / "messages"
    messages.mkdir()
    for task in range(12):
        messages_file(messages / f"task-{task:02d}.jsonl", task, bad_line=2 if task == 5 else None)
    return {
        "inspect": (["inspect", str(logs)], ["--db", "e.db"]),
        "openai-messages": (["openai-messages", *map(str, sorted(messages.iterdir()))], ["--model", "fallback/model"]),
        "taubench": (
            [
                "taubench",
                *(
                    str(FIXTURES / "taubench" / f)
                    for f in ("airline_results.json", "bad_arguments.json", "retail_results.json")
                ),
            ],
            ["--model", "tau/model"],
        ),
    }


def run_import(cwd: Path, args: list[str], workers: int):
    """`evalkit import ... -o runs --workers N` run in ``cwd``: relative output paths, so the messages
    of two runs in two directories can be compared byte for byte."""
    cwd.mkdir()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(cli, ["import", *args, "-o", "runs", "--workers", str(workers)])
    finally:
        os.chdir(old)
    return res.exit_code, res.stdout, res.stderr


def tree(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def ratings_rows(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT * FROM ratings ORDER BY 1, 2, 3, 4").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("fmt", ["inspect", "openai-messages", "taubench"])
def test_two_workers_write_the_same_bytes_as_one(corpora, tmp_path, fmt):
    inputs, extra = corpora[fmt]
    one = run_import(tmp_path / "one", [*inputs, *extra], workers=1)
    two = run_import(tmp_path / "two", [*inputs, *extra], workers=2)
    assert one == two  # exit code, stdout (per-input lines, in order), stderr (errors, in order)
    assert one[0] == 1  # every corpus holds one bad input
    files = tree(tmp_path / "one" / "runs")
    assert files == tree(tmp_path / "two" / "runs")
    assert len(files) >= 6 and not [f for f in files if f.endswith(".evalkit-import-tmp")]
    if fmt == "inspect":
        assert "ratings.jsonl" in files
        rows = ratings_rows(tmp_path / "one" / "e.db")
        assert rows and rows == ratings_rows(tmp_path / "two" / "e.db")


def test_a_bad_file_among_good_ones_with_two_workers(corpora, tmp_path):
    inputs, extra = corpora["openai-messages"]
    code, out, err = run_import(tmp_path / "w2", [*inputs, *extra], workers=2)
    bad = inputs[1 + 5]
    assert code == 1
    # the importer's one note (its transcripts give no command_tools), then the bad file
    note, line = err.splitlines()
    assert note.startswith("note: ") and "11 files" in note
    assert line.startswith(f"{bad}:2: not valid JSON")
    written = [line.split(":")[0] for line in out.splitlines()]
    assert written == [p for p in inputs[1:] if p != bad]  # the eleven others, in input order
    runs = tmp_path / "w2" / "runs"
    assert len(list(runs.glob("*.jsonl"))) == 11 * 3
    assert not list(runs.glob("*-t05*"))  # nothing of the bad file: all-or-nothing per input


def test_a_truncated_inspect_log_among_good_ones_keeps_the_others_and_their_ratings(corpora, tmp_path):
    inputs, extra = corpora["inspect"]
    code, out, err = run_import(tmp_path / "w2", [*inputs, *extra], workers=2)
    assert code == 1
    (line,) = err.splitlines()
    assert line.startswith(str(Path(inputs[1]) / "")) and "a-truncated.eval: not a readable inspect_ai log" in line
    assert len([x for x in out.splitlines() if x.endswith("14 runs -> runs")]) == 6
    ratings = (tmp_path / "w2" / "runs" / "ratings.jsonl").read_text().splitlines()
    assert len({json.loads(r)["item_id"] for r in ratings}) == 6 * 12  # 14 runs a log, 2 unscored (boom)
    assert len(ratings_rows(tmp_path / "w2" / "e.db")) == len(ratings)


def test_order_is_the_order_inputs_were_named(corpora, tmp_path):
    inputs, extra = corpora["openai-messages"]
    shuffled = [inputs[0], *reversed(inputs[1:])]
    code, out, _ = run_import(tmp_path / "w2", [*shuffled, *extra], workers=2)
    assert code == 1
    assert [line.split(":")[0] for line in out.splitlines()] == [
        p for p in shuffled[1:] if not p.endswith("task-05.jsonl")
    ]


def test_the_same_run_id_twice_is_an_error_for_the_later_input_whatever_finishes_first(corpora, tmp_path):
    """The check across inputs is the parent's, in input order: the copy named second is the one
    rejected, though a worker may finish converting it first."""
    first = messages_file(tmp_path / "z-first.jsonl", 40)
    copy = tmp_path / "a-copy.jsonl"
    copy.write_bytes(first.read_bytes())
    others = [str(messages_file(tmp_path / f"m{i}.jsonl", 50 + i)) for i in range(4)]
    result = import_files(
        "openai-messages", [*others[:2], str(first), *others[2:], str(copy)], tmp_path / "out", workers=2, model="m"
    )
    (error,) = result.errors
    assert str(error).startswith(f"{copy}: run_id 'refund-1-t40:acme/agent-1:trial0' was already imported from {first}")
    assert list(result.written) == [*others[:2], str(first), *others[2:]]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        Path(f).name for files in result.written.values() for f in files
    )  # the copy's staged files removed


class CrashingImporter:
    """Converts messages files, and fails like a buggy plugin (not an InputError) on m3.jsonl."""

    name = "crashing"
    options = ("model",)

    def convert(self, path, model=None):
        from evalkit.importers.formats.openai_messages import IMPORTER

        if Path(path).name == "m3.jsonl":
            raise RuntimeError("a bug in the plugin")
        return IMPORTER.convert(path, model=model)


def test_an_abort_leaves_no_staged_file_behind(tmp_path):
    """A crash (here a plugin's bug; Ctrl-C alike) stops the import: the inputs before it are in
    place, and no temporary file of the inputs the workers had staged is left in the directory."""
    paths = [str(messages_file(tmp_path / f"m{i}.jsonl", i)) for i in range(10)]
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="a bug in the plugin"):
        import_files(CrashingImporter(), paths, out, workers=2, model="m")
    names = sorted(p.name for p in out.iterdir())
    assert names and all(n.endswith(".jsonl") for n in names)
    assert {n.split("-t")[1][:2] for n in names} == {"00", "01", "02"}


@pytest.mark.parametrize("value", ["0", "-1"])
def test_workers_zero_or_negative_is_a_usage_error(corpora, tmp_path, value):
    inputs, extra = corpora["openai-messages"]
    res = CliRunner().invoke(cli, ["import", *inputs, *extra, "-o", str(tmp_path / "runs"), "--workers", value])
    assert res.exit_code == 2 and "--workers" in res.stderr
    assert not (tmp_path / "runs").exists()
    with pytest.raises(ValueError, match="workers must be at least 1"):
        import_files("openai-messages", inputs[1:], tmp_path / "runs", workers=int(value), model="m")


class PidImporter:
    """Converts a messages file and records which process converted it (module level: picklable)."""

    name = "pid"
    options = ("model",)

    def convert(self, path, model=None):
        from evalkit.importers.formats.openai_messages import IMPORTER

        runs = IMPORTER.convert(path, model=model)
        for run in runs:
            run[0]["converted_by"] = os.getpid()
        return runs


def pids_of(out: Path) -> set[int]:
    return {json.loads(p.read_text().splitlines()[0])["converted_by"] for p in out.glob("*.jsonl")}


def test_the_pool_really_converts_in_other_processes(tmp_path):
    paths = [str(messages_file(tmp_path / f"m{i}.jsonl", i)) for i in range(6)]
    result = import_files(PidImporter(), paths, tmp_path / "out", workers=2, model="m")
    assert not result.errors and result.runs == 18
    pids = pids_of(tmp_path / "out")
    assert pids and os.getpid() not in pids


def test_an_importer_that_cannot_be_pickled_converts_in_this_process(tmp_path):
    paths = [str(messages_file(tmp_path / f"m{i}.jsonl", i)) for i in range(4)]
    inner = PidImporter()
    closure = FunctionImporter("closure", lambda path, **options: inner.convert(path, **options))
    result = import_files(closure, paths, tmp_path / "out", workers=2, model="m")
    assert not result.errors and result.runs == 12
    assert pids_of(tmp_path / "out") == {os.getpid()}


def test_in_flight_inputs_are_bounded(tmp_path, monkeypatch):
    """When the parent commits its first input's files, at most workers × IN_FLIGHT_PER_WORKER tasks were
    handed to the pool, however fast the other worker is: the first input is slow to convert, and
    without the bound the other worker would convert the whole list meanwhile."""
    import evalkit.importers as importers

    marks = tmp_path / "marks"
    marks.mkdir()
    paths = [str(messages_file(tmp_path / f"m{i:02d}.jsonl", i)) for i in range(40)]
    started_at_first_write = []
    real_place = importers._place

    def counting_place(group, *args):
        if not started_at_first_write:
            started_at_first_write.append(len(list(marks.iterdir())))
        return real_place(group, *args)

    monkeypatch.setattr(importers, "_place", counting_place)
    monkeypatch.setattr(local_engine, "IN_FLIGHT_PER_WORKER", 2)
    result = import_files(MarkingImporter(str(marks)), paths, tmp_path / "out", workers=2, model="m")
    assert not result.errors and result.runs == 120
    assert 1 <= started_at_first_write[0] <= 2 * 2 * 1
    assert len(list(marks.iterdir())) == 40


class MarkingImporter:
    """Leaves a mark file per input it starts converting, and takes its time over the first one
    (picklable: a module-level class)."""

    name = "marking"
    options = ("model",)

    def __init__(self, marks: str):
        self.marks = marks

    def convert(self, path, model=None):
        from evalkit.importers.formats.openai_messages import IMPORTER

        Path(self.marks, Path(path).name).touch()
        if Path(path).name == "m00.jsonl":
            time.sleep(0.5)
        return IMPORTER.convert(path, model=model)


def test_inputs_are_grouped_into_tasks_by_count_and_by_size(tmp_path):
    """Many small files share a task; a large one closes its task (the in-flight bound is then in
    files and in bytes); a missing file still gets its place (its worker reports it)."""
    small = [tmp_path / f"s{i}" for i in range(5)]
    for p in small:
        p.write_bytes(b"x" * 10)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100)
    names = [str(p) for p in [small[0], small[1], big, small[2], tmp_path / "missing", small[3], small[4]]]
    assert list(import_job.group_inputs(names, max_files=3, max_bytes=100)) == [names[0:3], names[3:6], names[6:7]]
    assert list(import_job.group_inputs(names, max_files=8, max_bytes=50)) == [names[0:3], names[3:7]]


def test_a_short_list_is_cut_into_several_tasks_per_worker(tmp_path, monkeypatch):
    """Tasks hold up to TASK_FILES inputs, but 16 inputs on 2 workers are 8 tasks of 2, not one task
    that a single worker would convert alone."""
    from evalkit.importers import job

    real = job.group_inputs
    groups: list[list[str]] = []

    def spy(paths, *args):
        for group in real(paths, *args):
            groups.append(group)
            yield group

    monkeypatch.setattr(job, "group_inputs", spy)
    monkeypatch.setattr(job, "TASK_FILES", 64)  # as shipped, not this module's one per task
    paths = [str(messages_file(tmp_path / f"m{i:02d}.jsonl", i)) for i in range(16)]
    result = import_files(PidImporter(), paths, tmp_path / "out", workers=2, model="m")
    assert not result.errors and result.runs == 48
    assert [len(g) for g in groups] == [2] * 8
