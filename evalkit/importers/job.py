"""What a worker does with one input file of ``evalkit import``: convert it, serialise its runs and
stage their files (written under temporary names in the output directory).

The parent then checks run_ids across inputs, renames the staged files into place (or removes them
when the input is rejected) and stores the ratings, in input order — the split of ``evalkit score``
(evalkit/engines/job.py), except that the workers also do the writing, which costs as much as the
converting for small inputs. The same function runs in this process for one worker and in the pool
(evalkit.engines.local.map_local) for more, so the files are byte-identical whatever the number of
workers.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from evalkit.errors import InputError

TASK_FILES = 64
TASK_BYTES = 1 << 20


_staging = itertools.count()


@dataclass(frozen=True, slots=True)
class ImportJob:
    """The importer, the options every file is converted with, the output directory and the tag of
    this import's temporary file names (sent to each worker once per task)."""

    importer: Any  # an evalkit.importers.Importer
    options: dict[str, Any]
    out_dir: str
    tag: str


@dataclass(slots=True)
class ConvertedFile:
    """One input's outcome. ``error`` is set when the whole input is rejected; otherwise ``run_ids``,
    ``staged`` and ``finals`` hold each run's run_id, staged path and final path, and ``errors`` the
    runs that could not be converted. ``ratings`` are ratings_file.encode_rating's (or a row it
    refused), ``rating_values`` the database row of each (None for a refused one)."""

    path: str
    run_ids: list[str] = field(default_factory=list)
    staged: list[str] = field(default_factory=list)
    finals: list[str] = field(default_factory=list)
    ratings: list[Any] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    error: InputError | None = None
    notes: list[Any] = field(default_factory=list)  # evalkit.importers.notes.Note
    rating_values: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class ImportedGroup:
    """A task's outcomes (one group of inputs, :func:`group_inputs`) as columns, one entry per input
    in input order: what a worker sends back. One object per task crosses the process boundary, so
    the parent's thread that receives it rebuilds one object, not one per input or per run; the
    parent then checks each input's run_ids with one set operation and renames its files. The
    columns are ConvertedFile's fields, in its order."""

    paths: list[str]
    run_ids: list[list[str]]
    staged: list[list[str]]
    finals: list[list[str]]
    ratings: list[list[Any]]
    errors: list[list[InputError]]
    error: list[InputError | None]
    notes: list[list[Any]]
    rating_values: list[list[Any]]

    @classmethod
    def of(cls, files: list[ConvertedFile]) -> ImportedGroup:
        return cls(*([getattr(f, name) for f in files] for name in _FILE_FIELDS))

    def __reduce__(self):
        return ImportedGroup, tuple(getattr(self, name) for name in self.__slots__)


_FILE_FIELDS = ConvertedFile.__dataclass_fields__.keys()  # in the order of ImportedGroup's columns


def convert_one(job: ImportJob, path: str) -> ConvertedFile:
    from evalkit.importers.converted import Converted, ImportFormatError
    from evalkit.importers.writer import dumps_run, file_name, stage

    imp = job.importer
    try:
        if os.path.isdir(path):
            raise ImportFormatError(path, None, f"is a directory (format {imp.name} reads files)")
        out = imp.convert(path, **job.options)
        converted = out if isinstance(out, Converted) else Converted(list(out))
        run_ids = _check_runs(path, converted.runs)
        texts = []
        for run_id, run in zip(run_ids, converted.runs):
            try:
                texts.append((file_name(run_id), dumps_run(run)))
            except (ValueError, TypeError) as exc:  # NaN, Infinity (1e400) or a non-JSON value in a run
                raise ImportFormatError(path, None, f"cannot write run {run_id!r} as JSON: {exc}") from None
        ratings, values = _encode_ratings(converted.ratings)  # before staging: nothing left to fail after it
        staged = stage(texts, job.out_dir, f"{job.tag}-{os.getpid()}-{next(_staging)}")
    except InputError as exc:
        return ConvertedFile(path, error=exc)
    except OSError as exc:
        return ConvertedFile(path, error=ImportFormatError(path, None, f"cannot read or write: {exc.strerror or exc}"))
    notes = converted.notes or list(getattr(out, "notes", ()))
    tmps = [tmp for tmp, _ in staged]
    finals = [final for _, final in staged]
    return ConvertedFile(path, run_ids, tmps, finals, ratings, converted.errors, notes=notes, rating_values=values)


def _encode_ratings(ratings: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """The ratings checked and serialised here, in the worker (ratings_file.encode_rating), with their
    database rows (ratings_file.rating_values), so that the parent only merges lines and writes
    rows; a row that does not pass stays as it is (its database row None), for the parent to refuse
    as it always has."""
    from evalkit.importers.ratings_file import encode_rating_values

    out: list[Any] = []
    values: list[Any] = []
    for data in ratings:
        try:
            encoded, row = encode_rating_values(data)
        except ValueError:
            out.append(data)
            values.append(None)
        else:
            out.append(encoded)
            values.append(row)
    return out, values


def convert_tasks(job: ImportJob, tasks: list[list[str]]) -> list[ImportedGroup]:
    """Every input of ``tasks`` (groups of inputs, see :func:`group_inputs`), in order: one
    :class:`ImportedGroup` per group."""
    return [ImportedGroup.of([convert_one(job, p) for p in paths]) for paths in tasks]


def group_inputs(
    paths: Iterable[str], max_files: int | None = None, max_bytes: int | None = None
) -> Iterator[list[str]]:
    """Inputs in groups of consecutive files, one group per pool task: a group closes once it holds
    ``max_files`` files or ``max_bytes`` of input, so a large log is a task of its own while many
    small files share one (a task's fixed cost is a round trip between processes). The bound on
    the inputs in flight is then in files and in bytes."""
    max_files = max_files or TASK_FILES
    max_bytes = max_bytes or TASK_BYTES
    group: list[str] = []
    size = 0
    for path in paths:
        group.append(path)
        try:
            size += os.stat(path).st_size
        except OSError:  # the worker reports it
            pass
        if len(group) >= max_files or size >= max_bytes:
            yield group
            group, size = [], 0
    if group:
        yield group


def _check_runs(path: str, runs: list[Any]) -> list[str]:
    """The run_ids of ``runs``; ImportFormatError for a run an importer built wrongly or twice."""
    from evalkit.importers.converted import ImportFormatError

    mine: dict[str, None] = {}
    for i, run in enumerate(runs):
        if not run or not isinstance(run[0], dict) or run[0].get("type") != "meta":
            raise ImportFormatError(path, None, f"importer produced run {i} without a leading meta record")
        run_id = run[0].get("run_id")
        if not isinstance(run_id, str) or not run_id:
            raise ImportFormatError(path, None, f"importer produced run {i} without a run_id")
        if run_id in mine:
            raise ImportFormatError(path, None, f"run_id {run_id!r} occurs twice in this file")
        mine[run_id] = None
    return list(mine)
