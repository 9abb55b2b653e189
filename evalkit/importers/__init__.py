"""Importers: turn runs recorded by other harnesses into evalkit trajectories.

An importer converts one input file into a list of runs, each run being the list of trajectory
records (dicts: ``meta``, ``setup``, events, ``final``) that ``evalkit score`` reads natively. It is
either an object with ``name``, ``summary``, ``cli_options`` (the flags it understands, each an
:class:`~evalkit.importers.options.ImportOption`: ``evalkit import`` generates its flags from them),
optionally ``required`` (options the CLI must be given) and
``convert(path, **options)``, or a plain function
``convert(path, **options)``. Bad input raises :class:`ImportFormatError` naming the file and the
record; an importer never writes files itself — :func:`import_files` does, all-or-nothing per input.

An importer may also return :class:`Converted` (runs, plus ratings of those runs and per-run errors:
one bad sample need not reject a whole log), and may offer ``expand(directory) -> [paths]`` to accept
directories. Ratings are written to ``DIR/ratings.jsonl`` in the format of ``evalkit annotations
import`` (see :mod:`evalkit.importers.ratings_file`).

Registry: the built-in importers (``taubench``, ``tau2``, ``openai-messages``, ``inspect``,
``otel``) plus every entry point in the group ``evalkit.importers``. A plugin cannot shadow a
built-in name (the built-in wins), so an installed package can never change what ``evalkit import
taubench`` means.
"""

from __future__ import annotations

import importlib
import os
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib import metadata
from itertools import repeat
from pathlib import Path
from typing import Any, Protocol

from evalkit.errors import InputError

# what an importer returns, named here for plugins (``from evalkit.importers import Converted``)
from evalkit.importers.converted import Converted as Converted
from evalkit.importers.converted import ImportFormatError, Records
from evalkit.importers.converted import RunList as RunList
from evalkit.importers.notes import Note
from evalkit.importers.notes import merge as merge_notes
from evalkit.importers.options import ImportOption, accepted_names

ENTRY_POINT_GROUP = "evalkit.importers"

# name -> "module:attribute"; loaded lazily so listing formats stays cheap.
BUILTIN = {
    "atif": "evalkit.importers.formats.atif:IMPORTER",
    "auto": "evalkit.importers.formats.auto:IMPORTER",
    "inspect": "evalkit.importers.formats.inspect_logs:IMPORTER",
    "mini-swe-agent": "evalkit.importers.formats.mini_swe_agent:IMPORTER",
    "openai-messages": "evalkit.importers.formats.openai_messages:IMPORTER",
    "openhands": "evalkit.importers.formats.openhands:IMPORTER",
    "otel": "evalkit.importers.formats.otel_importer:IMPORTER",
    "swe-agent": "evalkit.importers.formats.swe_agent:IMPORTER",
    "taubench": "evalkit.importers.formats.taubench:IMPORTER",
    "tau2": "evalkit.importers.formats.tau2:IMPORTER",
}


class Importer(Protocol):
    name: str
    summary: str
    cli_options: tuple[ImportOption, ...]  # the flags it understands (evalkit.importers.options)

    def convert(self, path: str, **options: Any) -> list[Records]: ...


@dataclass
class FunctionImporter:
    """Adapts a plugin that is a bare function to the :class:`Importer` protocol."""

    name: str
    function: Callable[..., list[Records]]
    summary: str = ""
    options: tuple[str, ...] | None = None  # None: pass every option given

    def convert(self, path: str, **options: Any) -> list[Records]:
        return self.function(path, **options)


def _adapt(name: str, obj: Any) -> Importer:
    if isinstance(obj, type):  # an importer class: instantiate it
        obj = obj()
    if hasattr(obj, "convert"):
        if not getattr(obj, "name", None):
            obj.name = name
        return obj
    if callable(obj):
        doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
        return FunctionImporter(name, obj, doc[0] if doc else "")
    raise TypeError(f"importer {name!r} is neither an object with convert() nor a function")


def _load_target(target: str) -> Any:
    module, _, attr = target.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def available() -> dict[str, str]:
    """Every importer name mapped to where it comes from (``builtin`` or the entry point value)."""
    names = {name: "builtin" for name in BUILTIN}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        names.setdefault(ep.name, ep.value)
    return dict(sorted(names.items()))


def get_importer(name: str) -> Importer:
    """The importer called ``name``; ``KeyError`` (with the known names) when there is none."""
    if name in BUILTIN:
        return _adapt(name, _load_target(BUILTIN[name]))
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return _adapt(name, ep.load())
    raise KeyError(f"unknown import format {name!r}; known: {', '.join(available())}")


@dataclass
class ImportResult:
    """What :func:`import_files` did: files written per input, and the inputs that failed."""

    written: dict[str, list[str]] = field(default_factory=dict)
    errors: list[InputError] = field(default_factory=list)
    ratings: int = 0  # rating rows written to ratings_file by this call
    ratings_file: str | None = None
    notes: list[str] = field(default_factory=list)  # the importer's notes on the inputs written, one line per kind

    @property
    def runs(self) -> int:
        return sum(len(paths) for paths in self.written.values())


def supported_options(importer: Importer) -> tuple[str, ...] | None:
    """The keyword options ``importer`` accepts: its ``cli_options``' names (None: any)."""
    return accepted_names(importer)


def loaded() -> list[tuple[str, Importer]]:
    """Every available importer, loaded (``evalkit import`` builds its flags from their options)."""
    return [(name, get_importer(name)) for name in available()]


def expand_inputs(importer: Importer, paths: Sequence[str | Path]) -> tuple[list[str], list[InputError]]:
    """Inputs as given, and the errors of the ones that cannot be expanded. A directory becomes the
    files the importer's ``expand`` finds in it (an importer without ``expand`` gets the directory
    itself and reports it); a directory that cannot be listed (unreadable, gone meanwhile, or
    without the format's files) is that input's one error, naming it, and the other inputs are
    expanded all the same."""
    out: list[str] = []
    errors: list[InputError] = []
    expand = getattr(importer, "expand", None)
    for raw in paths:
        # a path that cannot even be examined is given as is: its reading names the reason
        directory = expand is not None and os.path.isdir(raw)
        if not directory:
            out.append(str(raw))
            continue
        try:
            out.extend(expand(str(raw)))
        except InputError as exc:
            errors.append(exc)
        except OSError as exc:
            errors.append(ImportFormatError(str(raw), None, f"cannot list this directory ({exc.strerror or exc})"))
    return out, errors


def import_files(
    importer: Importer | str,
    paths: Sequence[str | Path],
    out_dir: str | Path,
    *,
    db: str | Path | None = None,
    workers: int = 1,
    **options: Any,
) -> ImportResult:
    """Convert every input with ``importer`` and write one ``<run_id>.jsonl`` per run into ``out_dir``.

    Each input is all-or-nothing, unless the importer reports errors per run (:class:`Converted`):
    then the runs it could convert are written and the others are errors. The other inputs are
    imported either way; so is a directory that cannot be listed (:func:`expand_inputs`: its error
    comes first). Two runs with the same run_id within one call are an error for the later
    input (its runs would silently replace the earlier ones otherwise). Options whose value is None
    are not passed on. Ratings the importer produced are merged into ``out_dir/ratings.jsonl`` and,
    with ``db``, imported into that database's ``ratings`` table.

    ``workers`` > 1 converts the inputs in that many processes (evalkit.engines.local.map_local; up
    to 64 files or 1 MiB of input per task, fewer when the list is short so that each worker gets
    about four tasks, and a bounded number of tasks in flight). A worker converts
    an input and stages its files (temporary names in ``out_dir``); this process alone checks
    run_ids across inputs, renames the staged files into place or removes them, and writes the
    ratings file and the database, in input order: the result is the same as with one worker, byte
    for byte. An importer that cannot be sent to another process (a plugin that is a lambda or a
    closure) converts in this process.
    """
    import secrets

    from evalkit.engines.local import map_local
    from evalkit.importers.job import TASK_FILES, ImportJob, convert_tasks, group_inputs
    from evalkit.importers.writer import TMP_SUFFIX
    from evalkit.trajectory.input_files import path_list

    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    paths = path_list(paths, "paths")
    imp = get_importer(importer) if isinstance(importer, str) else importer
    require = getattr(imp, "require", None)
    if require is not None:
        require()  # loads the format's library here once: forked workers share it
    tag = secrets.token_hex(4)  # names this call's staged files, so an abort can remove them all
    given = {k: v for k, v in options.items() if v is not None}
    work = partial(convert_tasks, ImportJob(imp, given, str(out_dir), tag))
    if workers > 1 and not _picklable(work):
        workers = 1
    result = ImportResult()
    seen: dict[str, str] = {}  # run_id -> the input it was imported from
    ratings: list[Any] = []
    values: list[Any] = []  # the database row of each of ratings (job.ConvertedFile.rating_values)
    notes: list[Note] = []
    inputs, result.errors = expand_inputs(imp, paths)  # an input that cannot be listed: reported first
    # a task's fixed cost is a round trip, so tasks are large (up to TASK_FILES), but a short list is
    # still cut into a few tasks per worker so every worker has some
    per_task = max(1, min(TASK_FILES, -(-len(inputs) // (4 * workers))))
    stream = map_local(work, group_inputs(inputs, per_task), workers, 1)
    try:
        for group in stream:
            _place(group, seen, out_dir, result, ratings, values, notes)
    except BaseException:
        stream.close()  # the pool drops queued tasks and waits for the running ones
        for left in Path(out_dir).glob(f"*.{tag}-*{TMP_SUFFIX}"):  # staged by them, or interrupted
            left.unlink(missing_ok=True)
        raise
    # done: every staged file was renamed into place or removed as its input was placed, so there is
    # no directory to search for them (that search cost the parent a few µs per file in it)
    result.notes = [note.render() for note in merge_notes(notes)]
    if ratings:
        from evalkit.importers.ratings_file import store_ratings

        try:
            result.ratings_file = store_ratings(ratings, out_dir, db, values)
            result.ratings = len(ratings)
        except InputError as exc:
            result.errors.append(exc)
    return result


def _place(
    group: Any,
    seen: dict[str, str],
    out_dir: str | Path,
    result: ImportResult,
    ratings: list[Any],
    values: list[Any],
    notes: list[Note],
) -> None:
    """Put one task's inputs (an evalkit.importers.job.ImportedGroup) in place, in order: per input,
    its own error or a run_id an earlier input produced (one set operation) rejects it and removes
    its staged files; otherwise they are renamed into place and its ratings, their database rows and
    its notes are added to ``ratings``, ``values`` and ``notes``. Per run, this process only renames."""
    from evalkit.importers.writer import discard

    replace = os.replace
    imported = seen.keys()
    for i, path in enumerate(group.paths):
        staged, finals = group.staged[i], group.finals[i]
        error = group.error[i]
        run_ids = group.run_ids[i]
        if error is None and not imported.isdisjoint(run_ids):
            run_id = next(r for r in run_ids if r in seen)
            error = ImportFormatError(path, None, f"run_id {run_id!r} was already imported from {seen[run_id]}")
        if error is None:
            try:
                if finals:
                    deque(map(replace, staged, finals), 0)
                else:  # an input whose every run was an error: the directory exists all the same
                    Path(out_dir).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                error = ImportFormatError(path, None, f"cannot read or write: {exc.strerror or exc}")
        if error is not None:
            discard(zip(staged, finals))  # a file renamed into place before a rename failed is gone: skipped
            result.errors.append(error)
            continue
        result.written[path] = finals
        result.errors.extend(group.errors[i])
        notes.extend(group.notes[i])
        ratings.extend(group.ratings[i])
        values.extend(group.rating_values[i])
        seen.update(zip(run_ids, repeat(path)))


def _picklable(obj: Any) -> bool:
    import pickle

    try:
        pickle.dumps(obj)
    except Exception:  # pickle raises PicklingError, AttributeError or TypeError, by object
        return False
    return True
