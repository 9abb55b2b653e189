"""Judging through a provider's batch API (`evalkit judge --batch`): half the price, answers later.

The calls not served by the cache go into one or more batch files (within `[batch].max_requests`
and `[batch].max_file_bytes` each), one request per distinct cache key, built exactly as the live
request would be (judge.batch_line); the request's `custom_id` is its cache key. Each file is a
*submission*, stored before it is uploaded and updated as soon as the provider names its file and
its batch (evalkit/db/batches.py), so a killed process never pays twice: the next `--batch` (or
`--batch-status`) finds the submission, polls the batch, or adopts the batch the provider made
for it: the submission id is in the batch's metadata, and every page of the provider's list of
batches is searched for it.

A finished batch is collected: each answer is read and validated exactly like a live reply
(judge.check_reply: redacted where it enters, the rubric's reply model, the rationale limit) and
stored in the same cache and tables, priced at the batch rate, with its `batch_id`. An answer that
does not validate, a request the batch failed (the error file, a failed, cancelled or expired
batch) is asked again live, once per run of the command (the live call re-asks as configured); the
batch answer's tokens and cost are added to that call's, so nothing paid is lost from the cost
figures. Answers for runs that are not among this command's work (another selection of runs)
are stored too; one that failed stays a `judge_error`, retried by the next judge run.

Before the first batch, a judge whose output mode is not settled makes one live call (the probe
of docs/judge.md): a batch cannot step down from a refused request shape.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import sys
import time
from typing import Any, Protocol, Unpack

from evalkit.db import batches as stored
from evalkit.db.judge import now_utc
from evalkit.judges.protocol import Annotation, JudgeFatalError, JudgeSetupError
from evalkit.judges.rubrics import Rubric, annotation_model
from evalkit.judges.runner import (
    RunOptions,
    Summary,
    WorkItem,
    _result,
    record_answer,
    run_items,
    serve_from_cache,
    start_run,
)
from evalkit.judges.store import JudgeStore


@dataclasses.dataclass
class StoredItem(WorkItem):
    """A batch request of an earlier command whose run is not among this command's work items:
    enough to store its answer under the key it was asked with."""

    custom_id: str = ""

    def key_for(self, output_mode: str | None) -> str:
        return self.custom_id


class _WithPrior:
    """A judge whose next answer also carries the tokens and cost of the batch answer it replaces."""

    def __init__(self, judge: Any, prior: Annotation):
        self._judge, self._prior = judge, prior

    def __getattr__(self, name: str) -> Any:
        return getattr(self._judge, name)

    async def annotate(self, bundle: dict, rubric: Rubric) -> Annotation:
        ann = await self._judge.annotate(bundle, rubric)
        prior = self._prior
        for name in ("prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd"):
            mine, theirs = getattr(ann, name), getattr(prior, name)
            setattr(ann, name, None if mine is None or theirs is None else mine + theirs)
        ann.attempts += prior.attempts
        return ann


class BatchProvider(Protocol):
    """A provider's batch API as a judge gives it (``judge.batches()``): one module per provider,
    judges/openai_batch.py and judges/anthropic_batch.py. ``sub`` is the stored submission row
    (its id, input file, custom ids, creation time); every batch is returned in OpenAI's shape (id,
    status, request_counts, output_file_id, error_file_id)."""

    inline: bool  # the requests go in the create call; else in a file uploaded first, by
    # ``async upload(data, name) -> file id``, which only such a provider has

    async def create(self, sub: dict, data: bytes) -> dict: ...

    async def find(self, sub: dict) -> dict | None: ...  # a batch a killed process made for ``sub``

    async def retrieve(self, batch_id: str) -> dict: ...

    async def results(self, file_id: str) -> bytes: ...  # OpenAI-style output lines


def batch_unsupported(judge: Any) -> str | None:
    check = getattr(judge, "batch_unsupported", None)
    if not callable(check):
        return f"{judge.model}: a plugin judge has no provider batch API; judge without --batch"
    return check()


def chunks(lines: list[tuple[str, bytes]], max_requests: int, max_bytes: int) -> list[list[tuple[str, bytes]]]:
    """The lines in order, cut into files of at most max_requests lines and max_bytes bytes (a
    single line longer than max_bytes gets a file of its own: the provider says what it thinks)."""
    out: list[list[tuple[str, bytes]]] = []
    size = 0
    for line in lines:
        if not out or len(out[-1]) >= max_requests or (out[-1] and size + len(line[1]) > max_bytes):
            out.append([])
            size = 0
        out[-1].append(line)
        size += len(line[1])
    return out


class BatchProgress:
    """One line per poll on stderr (a terminal, or forced): each open batch's status and counts,
    elapsed time."""

    def __init__(self, enabled: bool | None, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else bool(enabled)
        self.start = time.monotonic()

    def poll(self, states: list[dict]) -> None:
        if not self.enabled or not states:
            return
        parts = []
        for state in states:
            counts = state.get("request_counts") or {}
            parts.append(
                f"{state.get('id')}: {state.get('status')} {counts.get('completed', 0) or 0}/"
                f"{counts.get('total', 0) or 0}"
            )
        self.stream.write(f"batch: {'; '.join(parts)}; elapsed {time.monotonic() - self.start:.0f} s\n")
        self.stream.flush()


async def run_batch(
    items: list[WorkItem],
    rubric: Rubric,
    store: JudgeStore,
    *,
    submit: bool = True,
    wait: bool = True,
    sleep=asyncio.sleep,
    **options: Unpack[RunOptions],
) -> tuple[list[dict], Summary]:
    """`run_items` through provider batches (the same `options`). ``submit=False, wait=False`` is
    `--batch-status`: poll the stored batches once and collect the finished ones, submitting
    nothing new."""
    max_cost = options.get("max_cost")
    summary, results, pending = start_run(items, rubric, store, options)
    judges = list(dict.fromkeys(item.judge for _, item in pending))
    for judge in judges:
        reason = batch_unsupported(judge)
        if reason:
            raise JudgeSetupError(reason)
    live: list[tuple[int, WorkItem]] = []

    async def ask_live(entries: list[tuple[int, WorkItem]]) -> None:
        """Ask these live (the mode probe, or answers a batch did not give), counted in `summary`."""
        if not entries:
            return
        answers, _ = await run_items(
            [item for _, item in entries],
            rubric,
            store,
            **RunOptions(options, refresh=True, progress=False, summary=summary),
        )
        summary.items -= len(entries)
        for (index, _), answer in zip(entries, answers):
            results[index] = answer

    # a judge whose mode is not known yet probes it with one live call
    for judge in judges:
        if not getattr(judge, "settled", True) and submit:
            first = next(entry for entry in pending if entry[1].judge is judge)
            pending.remove(first)
            await ask_live([first])
    if summary.fatal:
        pending, live = [], []

    # one request per cache key; the other runs of a key are served from its answer
    leaders: dict[str, tuple[int, WorkItem]] = {}
    followers: list[tuple[int, WorkItem]] = []
    for index, item in pending:
        key = item.key
        if key in leaders:
            followers.append((index, item))
        else:
            leaders[key] = (index, item)

    bar = BatchProgress(options.get("progress"))
    open_subs: list[tuple[Any, dict]] = []
    for judge in judges:
        for sub in stored.submissions(store.database, judge.model, rubric.identity, open_only=True):
            open_subs.append((judge, sub))
            for custom_id in sub["items"]:
                leaders.pop(custom_id, None)  # already asked in that batch: wait for it
    if submit and not summary.fatal:
        await _submit(leaders, rubric, store, summary, open_subs, results, max_cost)
    else:
        for index, item in leaders.values():
            results[index] = _result(item, "not_run", None, "not submitted (--batch-status)")
            summary.not_run += 1
    by_key = {item.key: (index, item) for index, item in pending}
    start = time.monotonic()
    while open_subs:
        states = []
        for judge, sub in list(open_subs):
            try:
                info = await _poll(judge, sub, store)
                if sub["status"] in stored.FINISHED:
                    live += await _collect(judge, sub, info or {}, rubric, store, summary, results, by_key)
                    open_subs.remove((judge, sub))
            except JudgeFatalError as exc:  # the batch API refused: what is stored is kept for a rerun
                summary.fatal = str(exc)
                break
            if info is not None:
                states.append(info)
        bar.poll(states)
        if not open_subs or not wait or summary.fatal:
            break
        if time.monotonic() - start > judge.config.batch_max_wait_s:
            summary.stopped = (
                f"batches still running after {judge.config.batch_max_wait_s:.0f} s ([batch].max_wait_s); "
                "run the same command again to collect them"
            )
            break
        await sleep(judge.config.batch_poll_s)
    for _judge, sub in open_subs:  # still running: their runs are not judged yet
        for custom_id in sub["items"]:
            entry = by_key.get(custom_id)
            if entry is not None and entry[0] not in results:
                results[entry[0]] = _result(
                    entry[1], "not_run", None, f"in batch {sub['batch_id']} ({sub['status']}): not finished"
                )
                summary.not_run += 1
        if not summary.stopped:
            summary.stopped = (
                "batches not finished yet: run `evalkit judge --batch` (or --batch-status) again "
                "to collect them; nothing is submitted twice"
            )
    await ask_live(live)
    for index, item in followers:
        row = serve_from_cache(item, rubric, store)
        if row is not None:
            summary.shared += 1
            results[index] = _result(item, "shared", row)
        elif index not in results:
            live.append((index, item))
    await ask_live([entry for entry in followers if entry[0] not in results])
    for index, item in pending:
        if index not in results:
            summary.not_run += 1
            results[index] = _result(item, "not_run", None, summary.fatal or summary.stopped)
    return [results[i] for i in sorted(results)], summary


async def _submit(
    leaders: dict[str, tuple[int, WorkItem]],
    rubric: Rubric,
    store: JudgeStore,
    summary: Summary,
    open_subs: list,
    results: dict,
    max_cost: float | None,
) -> None:
    """Write the batch files of the leaders, store each submission, upload it and create its batch."""
    by_judge: dict[Any, list[tuple[int, WorkItem]]] = {}
    for entry in leaders.values():
        by_judge.setdefault(entry[1].judge, []).append(entry)
    estimated = 0.0
    for judge, entries in by_judge.items():
        lines, records = [], []
        for index, item in entries:
            built = judge.batch_line(item.bundle, rubric)
            if isinstance(built, Annotation):  # cannot fit: a judge_error, as live
                results[index] = record_answer(item, rubric, store, built, now_utc(), summary)
                continue
            body, record, elided = built
            if max_cost is not None:
                cost = judge.estimate_batch_cost(body)
                if cost is not None and summary.cost_usd + estimated + cost > max_cost:
                    summary.stopped = (
                        f"--max-cost ${max_cost:.4f}: the batch's estimated input cost would pass it; "
                        f"{len(entries) - len(lines)} requests were not submitted"
                    )
                    break
                estimated += cost or 0.0
            key = item.key
            line = {"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body}
            lines.append((key, (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")))
            records.append(
                {
                    "custom_id": key,
                    "run_id": item.run_id,
                    "bundle_hash": item.bundle_hash,
                    "annotation_id": item.annotation_id,
                    "replicate_tag": item.replicate_tag,
                    "blind": int(item.blind),
                    "output_mode": record["output_mode"],
                    "request": json.dumps(record, sort_keys=True, ensure_ascii=False),
                    "elided_events": elided,
                }
            )
        by_id = {r["custom_id"]: r for r in records}
        for chunk in chunks(lines, judge.config.batch_max_requests, judge.config.batch_max_file_bytes):
            ids = [key for key, _ in chunk]
            sub_id = hashlib.sha256("\n".join([judge.model, *ids]).encode()).hexdigest()[:32]
            now = now_utc()
            row = {
                "submission_id": sub_id,
                "judge_model": judge.model,
                "api_base": getattr(judge, "api_base", None),
                "rubric_id": rubric.id,
                "rubric_version": rubric.version,
                "rubric_hash": rubric.text_hash,
                "status": "submitting",
                "requests": len(chunk),
                "created_at": now,
                "updated_at": now,
            }
            stored.add_submission(store.database, row, [by_id[key] for key in ids])
            sub = stored.submissions(store.database, judge.model, rubric.identity, open_only=True)
            sub = next(s for s in sub if s["submission_id"] == sub_id)
            sub["_data"] = b"".join(data for _, data in chunk)
            open_subs.append((judge, sub))


async def _poll(judge: Any, sub: dict, store: JudgeStore) -> dict | None:
    """Bring one submission forward: upload, create (or adopt) its batch, then read its status."""
    db = store.database
    provider = judge.batches()
    resumed = "_data" not in sub  # a submission stored by an earlier process, which may have made its batch
    uploaded_now = False  # a file this process uploaded has no batch yet: nothing to look for
    if sub["input_file_id"] is None and sub["batch_id"] is None and not provider.inline:
        sub["input_file_id"] = await provider.upload(_data(judge, sub), f"evalkit-{sub['submission_id']}.jsonl")
        stored.update_submission(db, sub["submission_id"], input_file_id=sub["input_file_id"], updated_at=now_utc())
        uploaded_now = True
    if sub["batch_id"] is None:
        if provider.inline:  # no metadata to find a batch by: the batch whose results hold these requests
            found = await provider.find(sub) if resumed and sub["status"] == "submitting" else None
            if found is not None and found.get("unverified"):
                return found  # it may be this submission's batch: wait for it to end, never submit twice
            made = found or await provider.create(sub, _data(judge, sub))
        else:
            search = sub["status"] == "submitting" and not uploaded_now
            found = await provider.find(sub) if search else None
            made = found or await provider.create(sub, b"")
        sub["batch_id"], sub["status"] = made.get("id"), made.get("status") or "validating"
        stored.update_submission(
            db, sub["submission_id"], batch_id=sub["batch_id"], status=sub["status"], updated_at=now_utc()
        )
        return made
    info = await provider.retrieve(sub["batch_id"])
    status = info.get("status") or sub["status"]
    if status != sub["status"]:
        sub["status"] = status
        stored.update_submission(
            db,
            sub["submission_id"],
            status=status,
            updated_at=now_utc(),
            output_file_id=info.get("output_file_id"),
            error_file_id=info.get("error_file_id"),
        )
    return info


def _data(judge: Any, sub: dict) -> bytes:
    """The submission's batch file: as written, or (killed before it was sent) made again from
    the stored requests."""
    data = sub.pop("_data", None)
    if data is not None:
        return data
    return b"".join(
        (
            json.dumps(
                {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": _body(judge, item)},
                ensure_ascii=False,
            )
            + "\n"
        ).encode("utf-8")
        for cid, item in sub["items"].items()
    )


def _body(judge: Any, item: dict) -> dict:
    """A stored request record as the body of a batch line again."""
    record = stored.item_request(item)
    body = {k: v for k, v in record.items() if k not in ("model", "output_mode", "params")}
    return {"model": judge.model.split("/", 1)[-1], **body, **(record.get("params") or {})}


def _lines(data: bytes) -> list[dict]:
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


async def _collect(
    judge: Any, sub: dict, info: dict, rubric: Rubric, store: JudgeStore, summary: Summary, results: dict, by_key: dict
) -> list[tuple[int, WorkItem]]:
    """Store a finished batch's answers; returns the current work items to ask again live."""
    answered: dict[str, dict] = {}
    failed: dict[str, str] = {}
    for name in ("output_file_id", "error_file_id"):
        if info.get(name):
            for line in _lines(await judge.batches().results(info[name])):
                cid, response = str(line.get("custom_id")), line.get("response") or {}
                if response.get("status_code") == 200 and isinstance(response.get("body"), dict):
                    answered[cid] = response["body"]
                else:
                    error = line.get("error") or (response.get("body") or {}).get("error") or {}
                    failed[cid] = (
                        f"{error.get('code') or response.get('status_code') or 'error'}: "
                        f"{error.get('message') or 'no answer'}"
                    )
    model_cls = annotation_model(rubric)
    again: list[tuple[int, WorkItem]] = []
    for cid, row in sub["items"].items():
        entry = by_key.get(cid)
        item = (
            entry[1]
            if entry
            else StoredItem(
                run_id=row["run_id"],
                bundle_hash=row["bundle_hash"],
                bundle={},
                judge=judge,
                key_material={},
                annotation_id=row["annotation_id"],
                replicate_tag=row["replicate_tag"] or "0",
                blind=bool(row["blind"]),
                custom_id=cid,
            )
        )
        ann = _read(
            judge,
            model_cls,
            row,
            answered.get(cid),
            failed.get(cid) or f"batch {sub['status']}: no answer",
            sub["batch_id"],
        )
        if ann.status == "ok" or entry is None:
            outcome = record_answer(item, rubric, store, ann, now_utc(), summary, source="batch")
            if entry is not None:
                results[entry[0]] = outcome
        else:  # asked again live, carrying what the batch answer cost
            summary.requests += ann.attempts
            again.append((entry[0], dataclasses.replace(item, judge=_WithPrior(item.judge, ann))))
    stored.update_submission(store.database, sub["submission_id"], status="collected", updated_at=now_utc())
    return again


def _read(judge: Any, model_cls, row: dict, body: dict | None, error: str, batch_id: str | None) -> Annotation:
    """One batch answer as an Annotation, validated as a live reply is (fail-closed)."""
    from evalkit.judges import output_modes as modes

    mode = row.get("output_mode") or judge.output_mode
    request = stored.item_request(row)
    common = dict(request=request, output_mode=mode, elided_events=row.get("elided_events") or 0, batch_id=batch_id)
    if body is None:
        return Annotation(
            status="judge_error",
            error=f"the batch did not answer ({error})",
            attempts=0,
            prompt_tokens=0,
            completion_tokens=0,
            cached_tokens=0,
            cost_usd=0.0,
            **common,
        )
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    p_tok = modes.token_count(usage.get("prompt_tokens", 0) or 0)
    c_tok = modes.token_count(usage.get("completion_tokens", 0) or 0)
    details = usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
    k_tok = modes.token_count(details.get("cached_tokens", 0) or 0)
    cost = judge.batch_cost(usage, p_tok, c_tok, k_tok or 0) if p_tok is not None and c_tok is not None else None
    common.update(prompt_tokens=p_tok, completion_tokens=c_tok, cached_tokens=k_tok, cost_usd=cost, attempts=1)
    choices = body.get("choices") if isinstance(body.get("choices"), list) else []
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        return Annotation(status="judge_error", error="the reply has no choices", **common)
    fault = modes.content_problem(message.get("content"))
    if fault is not None:
        return Annotation(status="judge_error", error=fault, **common)
    values, raw, problem = judge.check_reply(model_cls, mode, modes.reply_text(mode, message))
    if values is None or problem is not None:
        return Annotation(status="judge_error", raw_response=raw, error=f"invalid batch reply: {problem}", **common)
    return Annotation(status="ok", values=values, raw_response=raw, **common)
