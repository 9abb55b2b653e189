"""``evalkit import auto``: each file's format sniffed from its content, then that format's importer.

The content decides, never the file's name: a zip archive is an inspect_ai ``.eval`` log; a JSON
document (or the first line of a JSONL file) is matched against the shapes below, first match wins.
A file no shape fits is one error naming the formats tried. Only the options the chosen format
understands are passed on (``--model`` means nothing to an inspect_ai log, which names its model).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalkit.importers import ImportFormatError, get_importer, supported_options
from evalkit.importers.formats import agent_log
from evalkit.importers.formats.atif import is_atif
from evalkit.importers.formats.mini_swe_agent import is_mini_swe_agent
from evalkit.importers.formats.openhands import is_openhands
from evalkit.importers.formats.swe_agent import is_swe_agent
from evalkit.importers.jsonlist import read_text
from evalkit.trajectory import safe_json
from evalkit.trajectory.safe_json import JSONProblem

ZIP_MAGIC = b"PK\x03\x04"


def _is_tau2(doc: Any) -> bool:
    """tau2-bench's results: ``{info, tasks, simulations}``, or in its run-folder layout
    ``{info, tasks}`` with the simulations in a folder beside it."""
    return isinstance(doc, dict) and isinstance(doc.get("info"), dict) and ("simulations" in doc or "tasks" in doc)


def _is_taubench(doc: Any) -> bool:
    first = doc[0] if isinstance(doc, list) and doc else None
    return isinstance(first, dict) and "task_id" in first and "traj" in first


def _is_inspect(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("eval"), dict) and "version" in doc


def _is_span(item: Any) -> bool:
    return isinstance(item, dict) and ("context" in item or "trace_id" in item) and "name" in item


def _is_otel(doc: Any) -> bool:
    """OTLP JSON, an oteltest capture of OTLP requests, or raw SDK spans (a list, or under ``spans``)."""
    if isinstance(doc, dict):
        if isinstance(doc.get("resourceSpans"), list) or isinstance(doc.get("trace_requests"), list):
            return True
        doc = doc.get("spans")
    return isinstance(doc, list) and bool(doc) and _is_span(doc[0])


def _is_messages(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("messages"), list)


# (format, does the whole document fit, does the first line of a JSONL file fit)
SHAPES: tuple[tuple[str, Callable[[Any], bool], Callable[[Any], bool]], ...] = (
    ("atif", is_atif, lambda line: False),
    ("mini-swe-agent", is_mini_swe_agent, lambda line: False),
    ("swe-agent", is_swe_agent, lambda line: False),
    ("openhands", is_openhands, is_openhands),
    ("tau2", _is_tau2, lambda line: False),
    ("taubench", _is_taubench, lambda line: False),
    ("inspect", _is_inspect, lambda line: False),
    ("otel", _is_otel, _is_otel),
    ("openai-messages", lambda doc: False, _is_messages),
)
TRIED = ", ".join(name for name, _, _ in SHAPES)


def sniff(path: str) -> str:
    """The name of the format whose shape ``path``'s content has; ImportFormatError when none fits."""
    with open(path, "rb") as handle:
        if handle.read(4) == ZIP_MAGIC:
            return "inspect"
    text = read_text(path)
    try:
        doc = safe_json.loads(text)
        whole = True
    except JSONProblem as problem:
        if not text.strip():
            raise ImportFormatError(path, None, f"empty file: no known format fits (tried {TRIED})") from None
        first = next((line for line in text.splitlines() if line.strip()), "")
        try:
            doc = safe_json.loads(first)
        except JSONProblem:
            if problem.truncated and problem.line and problem.line > 1:  # a JSON document cut short
                raise ImportFormatError(
                    path, problem.line, f"not valid JSON: the file ends inside a JSON value ({problem.reason})"
                ) from None
            raise ImportFormatError(path, 1, f"no known format fits: neither JSON nor JSONL (tried {TRIED})") from None
        whole = False
    for name, fits_whole, fits_line in SHAPES:
        if fits_whole(doc) if whole else fits_line(doc):
            return name
    if whole:  # a JSONL file of one line is also one JSON document
        for name, _, fits_line in SHAPES:
            if fits_line(doc):
                return name
    raise ImportFormatError(path, 1, f"no known format fits this content (tried {TRIED})")


# what a directory given to auto is searched for: the files the formats are written as
SUFFIXES = (".json", ".jsonl", ".traj", ".eval")


class AutoImporter:
    name = "auto"
    summary = "each file's format sniffed from its content (" + TRIED + ")"
    cli_options = agent_log.OPTIONS
    ratings = True  # tau2 and inspect record ratings

    def expand(self, directory: str) -> list[str]:
        """The files in ``directory`` and below whose name ends as a format's does (``*.json``,
        ``*.jsonl``, ``*.traj``, ``*.eval``), sorted by path; a tau2-bench run folder
        (``results.json`` beside ``simulations/``) is its results file, its simulations read with it."""
        import os

        from evalkit.importers.formats.tau2 import SIMULATIONS_DIR

        found = []
        for root, dirs, files in os.walk(directory, onerror=_raise):
            if "results.json" in files and SIMULATIONS_DIR in dirs:
                dirs.remove(SIMULATIONS_DIR)  # read by the results file
            dirs.sort()
            found += [
                os.path.join(root, f)
                for f in sorted(files)
                if f.lower().endswith(SUFFIXES) and not _companion(root, f, files)
            ]
        if not found:
            raise ImportFormatError(
                directory, None, f"no {', '.join('*' + x for x in SUFFIXES)} file in this directory"
            )
        return found

    def convert(self, path: str, **options: Any) -> Any:
        importer = get_importer(sniff(path))
        require = getattr(importer, "require", None)
        if require is not None:
            try:
                require()
            except Exception as exc:  # the format's optional dependency is missing
                raise ImportFormatError(path, None, f"format {importer.name}: {exc}") from None
        accepted = supported_options(importer)
        given = {k: v for k, v in options.items() if v is not None}
        unused = sorted(k for k in given if accepted is not None and k not in accepted and k != "model")
        if unused:
            flags = ", ".join("--" + k.replace("_", "-") for k in unused)
            raise ImportFormatError(path, None, f"sniffed as {importer.name}, which does not use {flags}")
        given = {k: v for k, v in given.items() if accepted is None or k in accepted}
        return importer.convert(path, **given)


def _companion(folder: str, name: str, names: list[str]) -> bool:
    """Harbor's trial ``result.json`` (or ``<name>.result.json``): read by the ATIF trajectory it
    belongs to (beside it, or in ``agent/`` below), not a run of its own."""
    import os

    if name == "result.json":
        return "trajectory.json" in names or os.path.isfile(os.path.join(folder, "agent", "trajectory.json"))
    return name.endswith(".result.json") and name[: -len(".result.json")] + ".trajectory.json" in names


def _raise(exc: OSError) -> None:
    raise exc


IMPORTER = AutoImporter()
