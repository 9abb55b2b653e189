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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from evalkit.errors import InputError
from evalkit.importers.notes import Note
from evalkit.importers.notes import merge as merge_notes
from evalkit.importers.options import ImportOption, accepted_names

ENTRY_POINT_GROUP = "evalkit.importers"

# name -> "module:attribute"; loaded lazily so listing formats stays cheap.
BUILTIN = {
    "inspect": "evalkit.importers.formats.inspect_logs:IMPORTER",
    "openai-messages": "evalkit.importers.formats.openai_messages:IMPORTER",
    "otel": "evalkit.importers.formats.otel:IMPORTER",
    "taubench": "evalkit.importers.formats.taubench:IMPORTER",
    "tau2": "evalkit.importers.formats.tau2:IMPORTER",
}

Records = list[dict[str, Any]]


class ImportFormatError(InputError):
    """An input file an importer cannot convert. ``str()`` is ``path:line: message``.

    ``line`` is the line where the offending record starts when the importer knows it; the message
    itself names the record (index, ids), so the error is useful even without a line.
    """


@dataclass
class Converted:
    """What an importer returns when it has more than runs to give.

    ``ratings``: rating rows (dicts with ``item_id`` = a run_id of ``runs``, ``rater``, ``rater_kind``,
    ``dimension``, ``value``, optional ``confidence``); ``errors``: runs that could not be converted
    (each names the file and the record), while the other runs of the file are still written.
    """

    runs: list[Records]
    ratings: list[dict[str, Any]] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)  # said once per import (evalkit.importers.notes)


class RunList(list):
    """Runs, as an importer returns them, with ``notes`` (evalkit.importers.notes: a default the
    importer chose, said once per import). A plain list to every other caller."""

    def __init__(self, runs: Sequence[Records] = (), notes: Sequence[Note] = ()):
        super().__init__(runs)
        self.notes = list(notes)


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
        try:
            directory = expand is not None and Path(raw).is_dir()
        except OSError:  # cannot even be examined: given as is, its reading names the reason
            directory = False
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
    to 8 files or 1 MiB of input per task, a bounded number of tasks in flight). A worker converts
    an input and stages its files (temporary names in ``out_dir``); this process alone checks
    run_ids across inputs, renames the staged files into place or removes them, and writes the
    ratings file and the database, in input order: the result is the same as with one worker, byte
    for byte. An importer that cannot be sent to another process (a plugin that is a lambda or a
    closure) converts in this process.
    """
    import secrets

    from evalkit.engines.local import map_local
    from evalkit.importers.job import ImportJob, convert_tasks, group_inputs
    from evalkit.importers.writer import TMP_SUFFIX

    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
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
    seen: dict[str, str] = {}
    ratings: list[dict[str, Any]] = []
    notes: list[Note] = []
    inputs, result.errors = expand_inputs(imp, paths)  # an input that cannot be listed: reported first
    stream = map_local(work, group_inputs(inputs), workers, 1)
    try:
        for done in stream:
            try:
                written = _place(done, seen, out_dir)
            except InputError as exc:
                result.errors.append(exc)
                continue
            except OSError as exc:
                result.errors.append(ImportFormatError(done.path, None, f"cannot read or write: {exc.strerror or exc}"))
                continue
            result.written[done.path] = written
            result.errors.extend(done.errors)
            notes.extend(done.notes)
            ratings.extend(done.ratings)
            for run_id, _, _ in done.runs:
                seen[run_id] = done.path
    finally:
        stream.close()  # on an abort: the pool drops queued tasks and waits for the running ones
        for left in Path(out_dir).glob(f"*.{tag}-*{TMP_SUFFIX}"):  # staged by them, or interrupted
            left.unlink(missing_ok=True)
    result.notes = [note.render() for note in merge_notes(notes)]
    if ratings:
        from evalkit.importers.ratings_file import store_ratings

        try:
            result.ratings_file = store_ratings(ratings, out_dir, db)
            result.ratings = len(ratings)
        except InputError as exc:
            result.errors.append(exc)
    return result


def _place(done: Any, seen: dict[str, str], out_dir: str | Path) -> list[str]:
    """Rename one input's staged files (an evalkit.importers.job.ConvertedFile) into place and return
    their paths; raise InputError (the input's own error, or a run_id an earlier input produced) or
    OSError after removing them."""
    from evalkit.importers.writer import commit, discard

    staged = [(tmp, final) for _, tmp, final in done.runs]
    try:
        if done.error is not None:
            raise done.error
        for run_id, _, _ in done.runs:
            if run_id in seen:
                raise ImportFormatError(done.path, None, f"run_id {run_id!r} was already imported from {seen[run_id]}")
        if not staged:  # an input whose every run was an error: the directory exists all the same
            Path(out_dir).mkdir(parents=True, exist_ok=True)
        return commit(staged)
    except (InputError, OSError):
        discard(staged)
        raise


def _picklable(obj: Any) -> bool:
    import pickle

    try:
        pickle.dumps(obj)
    except Exception:  # pickle raises PicklingError, AttributeError or TypeError, by object
        return False
    return True
