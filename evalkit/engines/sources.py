"""Where trajectory files come from: local paths, standard input, or URLs read through fsspec.

A URL is anything with a scheme (``s3://``, ``gs://``, ``file://``, ...). fsspec is imported only
when a URL is given; without it (or without the scheme's driver, e.g. s3fs) the error says so. A URL
naming a directory is searched recursively for ``*.jsonl``, in sorted order, like a local directory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from evalkit.errors import InputError

STDIN = "-"
RATINGS_FILE = "ratings.jsonl"  # written beside imported runs (evalkit.importers.ratings_file): not a trajectory
SCENARIOS_FILE = "scenarios.jsonl"  # the scenarios of the runs beside it (scenario_files.BESIDE_NAMES): not a run
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(name: str) -> bool:
    return bool(_URL.match(name))


def _fsspec(url: str):
    try:
        import fsspec
    except ImportError:
        raise InputError(
            url, None, "reading URLs needs fsspec (pip install fsspec, plus s3fs or gcsfs for s3:// or gs://)"
        ) from None
    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise InputError(url, None, f"cannot open this URL: {exc}") from None


def expand_url(url: str) -> list[str]:
    """The files a URL names: itself, or the ``*.jsonl`` under it when it is a directory."""
    fs, root = _fsspec(url)
    try:
        if not fs.isdir(root):
            return [url]
        found = sorted(p for p in fs.glob(root.rstrip("/") + "/**/*.jsonl") if fs.isfile(p))
    except OSError as exc:
        raise InputError(url, None, f"cannot list: {exc}") from None
    return [fs.unstrip_protocol(p) for p in found]


def url_exists(url: str) -> bool:
    fs, root = _fsspec(url)
    try:
        return fs.exists(root)
    except OSError:
        return False


def read_url(url: str) -> bytes:
    """The bytes at ``url``, within the size limit of :mod:`evalkit.trajectory.input_files`."""
    from evalkit.trajectory.input_files import read_stream

    fs, root = _fsspec(url)
    try:
        with fs.open(root, "rb") as fh:
            return read_stream(url, fh)
    except OSError as exc:
        raise InputError(url, None, f"cannot read: {exc.strerror or exc}") from None


class Listed(list):
    """Inputs :func:`expand` already listed (and told its ``warn`` what it skipped): expanding them
    again gives them as they are, so a command that looked for files first does not list the
    directories twice."""


def expand(
    paths: Iterable[str | Path], warn: Callable[[str], None] | None = None, *, urls: bool = True
) -> Iterator[str]:
    """Files as given; directories (local, or URL unless ``urls`` is False) searched recursively for
    ``*.jsonl``, sorted, except the ``RATINGS_FILE`` an importer writes beside its runs and the
    ``SCENARIOS_FILE`` of the runs' tasks (named
    explicitly, it is read as given); ``warn`` is told what a local search skips. The one copy of
    the rule: :func:`expand_paths` is it for local paths."""
    from evalkit.trajectory.input_files import find_files

    if isinstance(paths, Listed):
        yield from paths
        return
    for path in paths:
        name = str(path)
        if urls and is_url(name):
            yield from expand_url(name)
        elif name != STDIN and Path(name).is_dir():
            yield from find_files(name, ".jsonl", warn, exclude=(RATINGS_FILE, SCENARIOS_FILE))
        else:
            yield name


def expand_paths(paths: Iterable[str | Path], warn: Callable[[str], None] | None = None) -> Iterator[str]:
    """Files as given; directories searched recursively for ``*.jsonl`` in sorted order, except the
    ``ratings.jsonl`` an importer writes beside its runs (named explicitly, it is read as given).
    What a search skips (a FIFO, a link to nothing, a directory it cannot list, ...) is reported
    through ``warn`` (:func:`evalkit.trajectory.input_files.find_files`). URLs are left as given."""
    return expand(paths, warn, urls=False)
