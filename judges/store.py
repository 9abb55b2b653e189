"""The judge's keys (cache key, annotation id) and its store, `JudgeStore`.

The tables and their writer live in evalkit's data layer (`evalkit.db.judge.JudgeTables`, the
rules for what may overwrite what are there); this module keeps what decides a key.
"""

from __future__ import annotations

import hashlib
import json

from evalkit.db.judge import JudgeTables


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_key(
    *,
    bundle_hash: str,
    rubric: dict,
    model: str,
    params: dict,
    schema: str,
    blind: bool,
    extra: dict | None = None,
    output_mode: str | None = None,
    sent_schemas: dict | None = None,
    prompt_layout: str | None = None,
) -> str:
    """sha256 over everything that can change the answer (see docs/judge.md). The output mode is
    part of it (the request differs); a judge without modes (a plugin) passes None. So is the
    schema the request carries when it is not the rubric's own (`sent_schemas`: mode -> its hash;
    json_object_schema sends a grammar-friendly narrowing whose bounds follow the config). So is
    the rubric's prompt layout, except the indented one every key was made with before layouts
    existed (None means that one), so those keys stay what they were."""
    material = {
        "bundle_hash": bundle_hash,
        "rubric": rubric,
        "model": model,
        "params": params,
        "schema": schema,
        "blind": bool(blind),
    }
    if output_mode not in (None, "json_schema"):  # json_schema is the request sent before modes
        material["output_mode"] = output_mode  # existed: its keys stay those already stored
    if sent_schemas and output_mode in sent_schemas:
        material["sent_schema"] = sent_schemas[output_mode]
    if prompt_layout not in (None, "indented_v0"):
        material["prompt_layout"] = prompt_layout
    if extra:
        material["extra"] = extra
    return _sha(json.dumps(material, sort_keys=True, separators=(",", ":")))


def annotation_id(
    *, run_id: str, model: str, rubric_id: str, rubric_version: int, blind: bool, replicate_tag: str
) -> str:
    """One annotation per (run, judge model, rubric id+version, blind, replicate tag): the latest
    answer replaces an earlier one (e.g. after a rubric edit); the cache keeps every call."""
    return _sha(json.dumps([run_id, model, rubric_id, rubric_version, int(bool(blind)), replicate_tag]))


# The judge's writer is part of evalkit's one data layer (evalkit/db/judge.py): every table is
# declared in evalkit/db/schema.py and no module outside evalkit.db opens a connection.
JudgeStore = JudgeTables
