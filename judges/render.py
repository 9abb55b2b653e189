"""Text shapes of a judge run: table, markdown, json, jsonl, and the summary lines.

Rows are sorted (run, judge model, replicate) and keys are sorted, so the same results print the
same bytes. Only the summary's latency (and which items came from the cache) varies between runs.
The annotation shapes are iterators of text, reading the annotations back one at a time: printing
10^5 of them holds no list of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from evalkit.judges.rubrics import Rubric
from evalkit.present import Table, sanitize
from evalkit.present.safe import md_text
from evalkit.present.table import MarkdownRows, TextRows, scalar_text


def _cell(value) -> str:
    """The kit's cell rule; a judge's values and confidences to 2 places."""
    return scalar_text(value, 2)


def _dimensions(rubric: Rubric) -> list[str]:
    return [d.name for d in rubric.dimensions] + (["outcome", "confidence"] if rubric.outcome else [])


def _header(result) -> list[str]:
    return ["run_id", "judge_model", "rep", "status", *_dimensions(result.rubric), "source"]


def _ordered(result) -> Iterator[dict]:
    """The annotations in printing order, (run, judge model, replicate): read back from the run's
    result log one at a time, or sorted when they are a list."""
    annotations = result.annotations
    ordered = getattr(annotations, "in_output_order", None)
    return ordered() if callable(ordered) else iter(sorted(annotations, key=_order))


def _rows(result) -> Iterator[list[str]]:
    dims = _dimensions(result.rubric)
    for ann in _ordered(result):
        values = ann.get("values") or {}
        yield [
            ann["run_id"],
            ann["judge_model"],
            _cell(ann.get("replicate")),
            ann["status"],
            *(_cell(values.get(d)) for d in dims),
            ann["source"],
        ]


def _chunks(lines: Iterable[str], size: int = 1 << 16) -> Iterator[str]:
    """Lines joined with newlines into pieces of about ``size`` characters, each ending in one."""
    part: list[str] = []
    length = 0
    for line in lines:
        part.append(line)
        length += len(line) + 1
        if length >= size:
            yield "\n".join(part) + "\n"
            part, length = [], 0
    if part:
        yield "\n".join(part) + "\n"


def _order(ann: dict):
    return (ann["run_id"], ann["judge_model"], ann.get("replicate") if ann.get("replicate") is not None else -1)


def _calls_line(s) -> str:
    """Calls against runs, honest about runs that shared one call (identical blind bundles)."""
    runs = s.items - s.cache_hits - s.not_run
    line = f"calls made: {s.calls} for {runs} run{'s' if runs != 1 else ''}"
    if s.shared:
        line += f" ({s.shared} run{' shares' if s.shared == 1 else 's share'} an identical bundle with another)"
    return line


def _cost_line(s) -> str:
    """What the calls cost, never a total that reads as known where a price was not."""
    if not s.cost_unknown:
        return f"cost: ${s.cost_usd:.6f}"
    why = "no litellm price and no [prices] entry in configs/judge.toml"
    if s.cost_unknown >= s.calls:
        return f"cost: unknown ({s.cost_unknown} calls: {why})"
    return f"cost: ${s.cost_usd:.6f} for {s.calls - s.cost_unknown} calls, unknown for {s.cost_unknown} ({why})"


def summary_lines(result) -> list[str]:
    s = result.summary
    rub = result.rubric
    blind = "non-blind (--show-mechanical)" if any(not a["blind"] for a in iter(result.annotations)) else "blind"
    lat = s.latency()
    lines = [
        f"rubric: {rub.id} v{rub.version} ({blind})",
        f"runs annotated: {s.ok + s.cache_hits + s.shared} of {s.items}",
        _calls_line(s),
        f"cache hits: {s.cache_hits}",
        f"requests sent: {s.requests} (retries: {s.retries})",
        f"failures: {s.failures}",
        f"tokens: prompt {s.prompt_tokens}"
        + (f" (cached {s.cached_tokens})" if s.cached_tokens else "")
        + f", completion {s.completion_tokens}",
        _cost_line(s),
    ]
    if lat["median_ms"] is not None:
        mean = "n/a (one call)" if lat["mean_excl_first_ms"] is None else f"{lat['mean_excl_first_ms']:.0f} ms"
        lines.append(f"latency per call: median {lat['median_ms']:.0f} ms, mean excluding first call {mean}")
    for model, mode in sorted(s.output_modes.items()):
        lines.append(f"output mode: {model}: {mode}")
    lines += [f"note: {note}" for note in s.notes]
    if s.elided:
        lines.append(
            f"context: {s.elided} calls had the middle of the transcript left out to fit the "
            "model's input limit (elided_events on the annotation)"
        )
    for reason, count in sorted(s.skipped.items()):
        lines.append(f"skipped (not judged): {count} with {reason}")
    if s.not_run:
        lines.append(f"not run: {s.not_run}")
    if s.stopped:
        lines.append(f"stopped: {s.stopped}")
    if s.cost_unknown and s.max_cost is not None:
        lines.append(f"note: --max-cost counted the {s.cost_unknown} calls of unknown cost as $0")
    if s.fatal:
        lines.append(f"fatal: {s.fatal}")
    for error in result.input_errors:
        lines.append(f"bad input: {error}")
    return lines


def annotations_text(result) -> Iterator[str]:
    """The table (its widths read in a first pass over the annotations), the errors, the summary."""
    header = _header(result)
    widths = [len(sanitize(h)) for h in header]
    for row in _rows(result):
        widths = [max(w, len(sanitize(c))) for w, c in zip(widths, row)]
    emit = TextRows(header, widths)

    def lines() -> Iterator[str]:
        yield from emit.head()
        for row in _rows(result):
            yield emit.row([sanitize(c) for c in row])
        for a in _ordered(result):
            if a.get("error"):
                yield sanitize(f"error: {a['run_id']} {a['judge_model']}: {a['error']}")
        yield ""
        yield from (sanitize(line) for line in summary_lines(result))

    return _chunks(lines())


def annotations_markdown(result) -> Iterator[str]:
    emit = MarkdownRows(_header(result))

    def lines() -> Iterator[str]:
        yield from emit.head()
        yield from (emit.row(row) for row in _rows(result))
        notes = summary_lines(result)
        if notes:
            yield ""
            yield from (f"- {md_text(note)}" for note in notes)

    return _chunks(lines())


def annotations_json(result) -> Iterator[str]:
    """``as_dict()`` as one JSON document (keys sorted, indent 2), the annotations written one by one."""
    rest = result.as_dict(annotations=False)
    yield '{\n  "annotations": ['
    first = True
    for a in _ordered(result):
        text = json.dumps(a, sort_keys=True, indent=2, ensure_ascii=False).replace("\n", "\n    ")
        yield ("\n    " if first else ",\n    ") + text
        first = False
    yield "]" if first else "\n  ]"
    yield ",\n" + json.dumps(rest, sort_keys=True, indent=2, ensure_ascii=False)[2:] + "\n"


def annotations_jsonl(result) -> Iterator[str]:
    return _chunks(json.dumps(a, sort_keys=True, ensure_ascii=False) for a in _ordered(result))


def render_dry_run(plan, fmt: str) -> str:
    if fmt in ("json", "jsonl"):
        return (
            json.dumps(plan.as_dict(), sort_keys=True, indent=2 if fmt == "json" else None, ensure_ascii=False) + "\n"
        )
    lines = [
        "dry run: nothing was sent",
        f"models: {', '.join(plan.models)}",
        f"items ({plan.unit}): {plan.items}",
        f"cache hits: {plan.cache_hits}",
        f"would send: {plan.to_send}",
        f"estimated prompt tokens (chars/4): {plan.estimated_prompt_tokens}",
    ]
    lines += [f"skipped (not judged): {c} with {r}" for r, c in sorted(plan.skipped.items())]
    if plan.batch is not None:
        b = plan.batch
        lines.append(
            f"batch plan: {b['requests']} requests in {b['files']} file(s) (one per distinct cache key; "
            "[batch].max_requests and max_file_bytes per file)"
        )
        lines.append(
            f"estimated input cost (prompt tokens, uncached): live ${b['estimated_input_cost_live_usd']:.6f}, "
            f"batch ${b['estimated_input_cost_batch_usd']:.6f}"
            + (f" (no price known for {', '.join(b['unpriced_models'])})" if b["unpriced_models"] else "")
        )
    if plan.first_prompt:
        lines.append("first prompt:")
        for message in plan.first_prompt:
            lines.append(f"--- {message['role']} ---")
            lines += message["content"].rstrip("\n").split("\n")
    return "\n".join(sanitize(line) for line in lines) + "\n"


def render_batches(subs: list[dict], fmt: str) -> str:
    """The stored provider batches (`evalkit judge --batch-status`)."""
    keys = ("submission_id", "batch_id", "judge_model", "status", "requests", "created_at", "updated_at")
    if fmt in ("json", "jsonl"):
        return (
            json.dumps(
                {"batches": [{k: s.get(k) for k in keys} for s in subs]},
                sort_keys=True,
                indent=2 if fmt == "json" else None,
            )
            + "\n"
        )
    if not subs:
        return "no batches stored\n"
    body = [[str(s.get(k) if s.get(k) is not None else "-") for k in keys] for s in subs]
    return "\n".join(["batches:"] + Table(list(keys), body).text_lines()) + "\n"


def render_stats(rows: list[dict], fmt: str, modes: list[dict] | None = None) -> str:
    modes = modes or []
    if fmt == "json":
        return (
            json.dumps(
                {
                    "calls": rows,
                    "output_modes": [{k: m[k] for k in ("judge_model", "api_base", "output_mode")} for m in modes],
                },
                sort_keys=True,
                indent=2,
            )
            + "\n"
        )
    from evalkit.db.judge import CACHE_COUNTS  # the cache command's only: the judge's output never needs it

    header = ["judge_model", "rubric", "status", *CACHE_COUNTS, "cost_usd"]
    body = [
        [
            r["judge_model"],
            f"{r['rubric_id']} v{r['rubric_version']}",
            r["status"],
            *(str(r[k]) for k in CACHE_COUNTS),
            "-" if r["cost_usd"] is None else f"{r['cost_usd']:.6f}",
        ]
        for r in rows
    ]
    out = "\n".join(Table(header, body).text_lines()) + "\n" if body else "cache is empty\n"
    if modes:
        out += (
            "\noutput modes (remembered per model and api base):\n"
            + "\n".join(
                Table(
                    ["judge_model", "api_base", "output_mode"],
                    [[m["judge_model"], m["api_base"] or "-", m["output_mode"]] for m in modes],
                ).text_lines()
            )
            + "\n"
        )
    return out


def annotations(result: Any, fmt: str) -> Iterator[str]:
    """A judge run's annotations and summary (``table``, ``markdown``, ``json`` or ``jsonl``), in
    pieces to write one after the other."""
    shape = {
        "table": annotations_text,
        "markdown": annotations_markdown,
        "json": annotations_json,
        "jsonl": annotations_jsonl,
    }[fmt]
    return shape(result)
