"""Deterministic JSONL writing of imported runs.

Same records in, byte-identical files out: every record is one line of compact JSON with ``type``
first and every other key sorted (at every depth), UTF-8, ``\\n`` line ends, no NaN/Infinity, and
nothing taken from the clock. A run goes to ``<out_dir>/<file name of its run_id>.jsonl``.

Writes are all-or-nothing per call: every file is first written under a temporary name (staged)
and only renamed into place once all of them were written, so a failure leaves no partial output
behind. ``evalkit import --workers`` stages in the worker processes and renames in the parent.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SURROGATE = re.compile("[\ud800-\udfff]")
TMP_SUFFIX = ".evalkit-import-tmp"


def dumps_record(record: dict[str, Any]) -> str:
    """One record as a JSONL line (without the newline): ``type`` first, other keys sorted."""
    rest = {k: v for k, v in record.items() if k != "type"}
    body = json.dumps(rest, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if "type" not in record:
        return body
    head = '{"type":' + json.dumps(record["type"], ensure_ascii=False)
    return head + ("}" if body == "{}" else "," + body[1:])


def dumps_run(records: Sequence[dict[str, Any]]) -> str:
    return "".join(dumps_record(r) + "\n" for r in records)


def encode_json_text(text: str) -> bytes:
    """JSON text as UTF-8. A lone surrogate (a file name that is not valid UTF-8, as Python hands
    it over, recorded as a run's source) cannot be encoded: it is written as the escaped text
    ``\\xNN`` (the file name's byte) or ``\\udNNN``, as evalkit.trajectory.input_files.shown_name
    shows such a name. Surrogates only occur inside JSON strings, where that text is valid."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(_escaped, text).encode("utf-8")


def _escaped(match: re.Match[str]) -> str:
    from evalkit.trajectory.input_files import shown_name

    return shown_name(match.group()).replace("\\", "\\\\")  # inside a JSON string: its backslash escaped


def file_name(run_id: str) -> str:
    """A portable file name for a run_id: unsafe characters become ``_``; a short hash of the
    original run_id is appended whenever anything was replaced, so two run_ids never share a file."""
    safe = _UNSAFE.sub("_", run_id).strip("._") or "run"
    if safe != run_id:
        safe = f"{safe[:150]}-{hashlib.sha256(run_id.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    return safe + ".jsonl"


def stage(texts: Sequence[tuple[str, str]], out_dir: str | Path, tag: str = "") -> list[tuple[str, str]]:
    """Write each ``(file name, text)`` under a temporary name in ``out_dir`` (created if needed), all
    or nothing; return ``(temporary path, final path)`` pairs for :func:`commit` or :func:`discard`.
    ``tag`` goes into the temporary names, so writers staging at once never share one."""
    out = Path(out_dir)
    if texts:
        out.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[str, str]] = []
    try:
        for name, text in texts:
            final = out / name
            tmp = final.with_name(f"{final.name}{'.' + tag if tag else ''}{TMP_SUFFIX}")
            data = encode_json_text(text)
            fh = open(tmp, "wb")
            staged.append((str(tmp), str(final)))  # ours from here on: removed if anything fails
            with fh:
                fh.write(data)
    except BaseException:
        discard(staged)
        raise
    return staged


def commit(staged: Sequence[tuple[str, str]]) -> list[str]:
    """Rename staged files into place; return their final paths."""
    for tmp, final in staged:
        os.replace(tmp, final)
    return [final for _, final in staged]


def discard(staged: Iterable[tuple[str, str]]) -> None:
    for tmp, _ in staged:
        try:
            os.unlink(tmp)
        except OSError:
            pass
