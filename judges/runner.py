"""Run judge calls concurrently, with the cache in front and the store behind.

Concurrency is a fixed pool of `concurrency` asyncio workers pulling from one queue, so at most
that many requests are in flight; within that, each judge's requests pass through an adaptive
limit (judges/concurrency.py: halved on a 429, grown back by one after a window of successes), so
a large run settles near the provider's rate limit instead of retrying into it. `max_cost` is
checked before each new call is taken: once the cost of this run's calls reaches it, no new call
starts (calls already in flight finish and are stored), and the summary says so. A
`JudgeFatalError` (bad key, bad request) stops scheduling the same way and is reported as the
reason.

Memory does not grow with the number of items: the items are pulled from their iterable as a
worker becomes free (a generator is never read ahead), each result entry goes to a `ResultLog`
(a temporary SQLite file, read back in order for printing), and of each call only its latency is
kept in memory (8 bytes, for the median).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

from evalkit.aggregate.per_call import median_and_mean_after_first
from evalkit.db.judge import now_utc
from evalkit.db.scratch import scratch_connection
from evalkit.judges.concurrency import AdaptiveLimiter, use_limiter
from evalkit.judges.output_modes import extract_json
from evalkit.judges.protocol import Annotation, Judge, JudgeFatalError
from evalkit.judges.rubrics import Rubric, annotation_model
from evalkit.judges.store import JudgeStore, cache_key


@dataclass
class WorkItem:
    run_id: str
    bundle_hash: str
    bundle: dict
    judge: Judge
    key_material: dict  # cache_key's arguments except the output mode
    annotation_id: str
    replicate_tag: str  # "0" for the primary answer, "resample:<seed>" for a drift replicate
    blind: bool

    def key_for(self, output_mode: str | None) -> str:
        return cache_key(**self.key_material, output_mode=output_mode)

    @property
    def key(self) -> str:
        """The cache key for the mode the judge asks in now (it may step down during a run)."""
        return self.key_for(getattr(self.judge, "output_mode", None))


@dataclass
class Summary:
    items: int = 0
    calls: int = 0  # judge calls made by this run (one per item not served from cache)
    ok: int = 0  # of which produced a valid annotation
    cache_hits: int = 0  # answers stored by an earlier run
    shared: int = 0  # runs whose blind bundle is identical to one called in this run
    requests: int = 0  # HTTP requests, retries and re-asks included
    retries: int = 0
    failures: int = 0
    not_run: int = 0  # not started because of --max-cost or a fatal error
    prompt_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, billed at the provider's cached-input price
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_unknown: int = 0  # calls whose price is unknown (no litellm price, no override)
    skipped: dict = field(default_factory=dict)  # runs not judged, by reason
    stopped: str | None = None
    max_cost: float | None = None
    fatal: str | None = None
    latencies_ms: array = field(default_factory=lambda: array("d"))  # in call start order
    output_modes: dict = field(default_factory=dict)  # judge model -> mode of its last call
    notes: list = field(default_factory=list)  # output-mode step-downs, in order
    elided: int = 0  # calls whose transcript was shortened to fit the context window
    rate_limited: int = 0  # requests answered 429 (each burst halves the in-flight limit)
    concurrency_lowest: int | None = None  # the lowest in-flight limit 429s brought it to (None: never lowered)

    def latency(self) -> dict:
        median, mean_after_first = median_and_mean_after_first(self.latencies_ms)
        return {"median_ms": median, "mean_excl_first_ms": mean_after_first}

    def as_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k != "latencies_ms"}
        out["cost_usd"] = round(self.cost_usd, 8)
        out["latency"] = self.latency()
        return out


def clock_text(seconds: float) -> str:
    seconds = int(max(0.0, seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal (or forced): done of
    total, cache hits, failures, tokens and cost so far, the rate of calls, elapsed time and the
    ETA (the calls left at the rate so far; cache hits are instant and not part of the rate)."""

    def __init__(self, total: int, enabled: bool | None = None, stream=None, clock=time.monotonic):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total = total
        self.done = 0
        self._last = 0.0
        self._clock = clock
        self._start = clock()

    def update(self, summary: Summary, force: bool = False) -> None:
        self.done += 0 if force else 1
        if not self.enabled or not self.total:
            return
        now = self._clock()
        if not force and now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        width = 30
        filled = int(width * self.done / self.total)
        elapsed = now - self._start
        called = self.done - summary.cache_hits
        rate = called / elapsed if elapsed > 0 and called > 0 else None
        left = self.total - self.done
        eta = "0:00" if not left else ("?" if rate is None else clock_text(left / rate))
        self.stream.write(
            f"\rjudging [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"hits {summary.cache_hits} failures {summary.failures} "
            f"tokens {summary.prompt_tokens + summary.completion_tokens} ${summary.cost_usd:.4f} "
            f"{'-' if rate is None else f'{rate:.1f}'} calls/s elapsed {clock_text(elapsed)} ETA {eta}"
        )
        if self.done >= self.total or force:
            self.stream.write("\n")
        self.stream.flush()


# What a call and its annotation both record about the answer (the same column names in both tables)
FIGURES = (
    "cost_usd",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "output_mode",
    "elided_events",
    "cached_tokens",
    "batch_id",
)


def _identity(item: WorkItem, rubric: Rubric) -> dict:
    """The columns naming what was judged, by whom and with which rubric (both tables)."""
    return {
        "run_id": item.run_id,
        "bundle_hash": item.bundle_hash,
        "judge_model": item.judge.model,
        "rubric_id": rubric.id,
        "rubric_version": rubric.version,
        "rubric_hash": rubric.text_hash,
    }


def _call_row(item: WorkItem, rubric: Rubric, ann: Annotation, started: str) -> dict:
    return {
        "cache_key": item.key_for(ann.output_mode),
        **_identity(item, rubric),
        "params": json.dumps(item.judge.params, sort_keys=True),
        "request": json.dumps(ann.request, sort_keys=True, ensure_ascii=False),
        "raw_response": ann.raw_response,
        "status": ann.status,
        "error": ann.error,
        "attempts": ann.attempts,
        "started_at": started,
        "finished_at": now_utc(),
        "prompt_layout": rubric.prompt_layout,
        **{name: getattr(ann, name) for name in FIGURES},
    }


def _ann_row(item: WorkItem, rubric: Rubric, status: str, values: dict | None, figures: dict) -> dict:
    """The annotation row; `figures` holds the FIGURES of the answer (a call's or a cached row's)."""
    return {
        "annotation_id": item.annotation_id,
        **_identity(item, rubric),
        "blind": int(item.blind),
        "status": status,
        "annotation": json.dumps(values, sort_keys=True, ensure_ascii=False) if values is not None else None,
        "rationale": (values or {}).get("rationale"),
        "cache_key": item.key_for(figures.get("output_mode")),
        "created_at": now_utc(),
        "prompt_layout": rubric.prompt_layout,
        **{name: figures.get(name) for name in FIGURES},
    }


def _result(item: WorkItem, source: str, row: dict | None, error: str | None = None) -> dict:
    values = json.loads(row["annotation"]) if row and row.get("annotation") else None
    return {
        "run_id": item.run_id,
        "judge_model": item.judge.model,
        "replicate": row["replicate"] if row else None,
        "blind": item.blind,
        "status": row["status"] if row else "not_run",
        "source": source,
        "values": values,
        "error": error,
    }


def record_answer(
    item: WorkItem,
    rubric: Rubric,
    store: JudgeStore,
    ann: Annotation,
    started: str,
    summary: Summary,
    source: str = "call",
) -> dict:
    """Store one finished call (a live one or a batch's answer) and count it; its result entry."""
    summary.calls += 1
    summary.requests += ann.attempts
    summary.retries += ann.retries
    summary.prompt_tokens += ann.prompt_tokens or 0
    summary.cached_tokens += ann.cached_tokens or 0
    summary.completion_tokens += ann.completion_tokens or 0
    if ann.cost_usd is None:
        summary.cost_unknown += 1
    else:
        summary.cost_usd += ann.cost_usd
    values = ann.values if ann.status == "ok" else None
    row = store.record(
        _call_row(item, rubric, ann, started),
        _ann_row(item, rubric, ann.status, values, {name: getattr(ann, name) for name in FIGURES}),
        values,
        (values or {}).get("confidence"),
        item.replicate_tag,
    )
    if ann.elided_events:
        summary.elided += 1
    if ann.output_mode:
        summary.output_modes[item.judge.model] = ann.output_mode
    if ann.status == "ok":
        summary.ok += 1
    else:
        summary.failures += 1
    result = _result(item, source, row if ann.status == "ok" else None, ann.error)
    if ann.status != "ok":
        result.update(status="judge_error", replicate=row["replicate"])
    return result


def serve_from_cache(item: WorkItem, rubric: Rubric, store: JudgeStore, key: str | None = None) -> dict | None:
    """Write the annotation for a cache hit; None when the key (default: the item's for the mode
    its judge asks in now) has no usable stored answer."""
    cached = store.get_ok(key or item.key)
    if cached is None:
        return None
    mode = cached.get("output_mode") or "json_schema"
    try:
        values = (
            annotation_model(rubric)
            .model_validate_json(extract_json(mode, cached["raw_response"] or ""))
            .model_dump(mode="json")
        )
    except ValueError:  # a stored reply that no longer validates is not served
        return None
    row = store.record(
        {},
        _ann_row(
            item,
            rubric,
            "ok",
            values,
            {**{name: cached.get(name) for name in FIGURES}, "elided_events": cached.get("elided_events") or 0},
        ),
        values,
        values.get("confidence"),
        item.replicate_tag,
        write_call=False,
    )
    return row


class ResultLog:
    """The result entries of one run (one dict per work item, at its position), and which calls
    the run made, in a private temporary SQLite database (SQLite's own: a file it deletes itself,
    whose pages stay in memory only up to its small page cache) instead of memory. Reads back in
    position order (iteration, ``len``, indexing: it stands where a list of entries would) or, for
    printing, in :meth:`in_output_order`."""

    _FLUSH = 512

    def __init__(self) -> None:
        self._conn = scratch_connection()
        self._conn.execute(
            "CREATE TABLE results (pos INTEGER PRIMARY KEY, run_id TEXT, judge_model TEXT, rep INTEGER, doc TEXT)"
        )
        self._conn.execute("CREATE TABLE called (material TEXT PRIMARY KEY) WITHOUT ROWID")
        self._rows: list[tuple] = []
        self._positions: set[int] = set()  # of the rows not yet written

    def __setitem__(self, pos: int, result: dict) -> None:
        rep = result.get("replicate")
        text = json.dumps(result, ensure_ascii=False)
        self._rows.append((pos, result["run_id"], result["judge_model"], -1 if rep is None else rep, text))
        self._positions.add(pos)
        if len(self._rows) >= self._FLUSH:
            self._flush()

    def __contains__(self, pos: object) -> bool:
        if pos in self._positions:
            return True
        return self._conn.execute("SELECT 1 FROM results WHERE pos = ?", (pos,)).fetchone() is not None

    def _flush(self) -> None:
        if self._rows:
            self._conn.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?)", self._rows)
            self._rows, self._positions = [], set()

    def _docs(self, sql: str, args: tuple = ()) -> Iterator[dict]:
        self._flush()
        cursor = self._conn.execute(sql, args)
        while rows := cursor.fetchmany(256):
            for (text,) in rows:
                yield json.loads(text)

    def __iter__(self) -> Iterator[dict]:
        return self._docs("SELECT doc FROM results ORDER BY pos")

    def in_output_order(self) -> Iterator[dict]:
        """By (run, judge model, replicate), position among equals: the order every shape prints."""
        return self._docs("SELECT doc FROM results ORDER BY run_id, judge_model, rep, pos")

    def __len__(self) -> int:
        self._flush()
        return self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def __getitem__(self, index: int) -> dict:
        n = len(self)
        if not -n <= index < n:
            raise IndexError("result index out of range")
        return next(self._docs("SELECT doc FROM results ORDER BY pos LIMIT 1 OFFSET ?", (index % n,)))

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (list, tuple, ResultLog)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        # never the entries themselves: a repr is taken where nobody prints it (asyncio formats the
        # finished main task, result included, when asyncio.run restores its SIGINT handler), and
        # reading every entry back would hold them all in memory at once
        return f"<ResultLog: {len(self)} results>"

    def mark_called(self, material: str) -> None:
        self._conn.execute("INSERT OR IGNORE INTO called VALUES (?)", (material,))

    def was_called(self, material: str) -> bool:
        return self._conn.execute("SELECT 1 FROM called WHERE material = ?", (material,)).fetchone() is not None

    def close(self) -> None:
        self._conn.close()


def _material(item: WorkItem) -> str:
    """What items share a call by: their cache key's material, whatever the output mode."""
    return hashlib.sha256(json.dumps(item.key_material, sort_keys=True).encode()).hexdigest()


class RunOptions(TypedDict, total=False):
    """The keywords of :func:`run_items`, which judges/batch.py's `run_batch` takes too. ``total``:
    how many items there are (or a function counting them, called only for a bar that is drawn),
    for the progress bar; default ``len(items)`` when it has one."""

    concurrency: int
    max_cost: float | None
    refresh: bool
    progress: bool | None
    summary: Summary | None
    total: int | Callable[[], int | None] | None


def _check_options(options: RunOptions) -> None:
    unknown = sorted(set(options) - set(RunOptions.__annotations__))
    if unknown or "concurrency" not in options:  # what a keyword signature would refuse
        raise TypeError(f"run options: unknown {unknown}" if unknown else "run options: concurrency is required")


def start_run(
    items: Iterable[WorkItem], rubric: Rubric, store: JudgeStore, options: RunOptions, on_hit=lambda summary: None
) -> tuple[Summary, dict[int, dict], list[tuple[int, WorkItem]]]:
    """(summary, results, pending): the items counted, cache hits answered (unless refresh), the
    rest left to ask, with their positions (judges/batch.py's start: it holds every item)."""
    _check_options(options)
    items = list(items)
    summary = options.get("summary") or Summary()
    summary.items += len(items)
    summary.max_cost = options.get("max_cost")
    results: dict[int, dict] = {}
    pending: list[tuple[int, WorkItem]] = []
    for index, item in enumerate(items):
        row = None if options.get("refresh") else serve_from_cache(item, rubric, store)
        if row is not None:
            summary.cache_hits += 1
            results[index] = _result(item, "cache", row)
            on_hit(summary)
        else:
            pending.append((index, item))
    return summary, results, pending


async def run_items(
    items: Iterable[WorkItem], rubric: Rubric, store: JudgeStore, **options: Unpack[RunOptions]
) -> tuple[ResultLog, Summary]:
    """Judge ``items`` (any iterable, pulled one at a time as a worker becomes free): each one is
    a cache hit (a stored answer from before this run, unless ``refresh``), shares the call of an
    earlier item with the same cache key, is called, or is not run (after --max-cost or a fatal
    error). Returns the result entries (in item order) and the summary."""
    _check_options(options)
    concurrency, max_cost, refresh = options["concurrency"], options.get("max_cost"), options.get("refresh")
    bar = Progress(0, options.get("progress"))
    if bar.enabled:  # counting may cost a query: only for a bar that is drawn
        total = options.get("total")
        total = total() if callable(total) else total
        bar.total = len(items) if total is None and isinstance(items, Sized) else total or 0
    summary = options.get("summary") or Summary()
    summary.max_cost = max_cost
    results = ResultLog()
    source = enumerate(items)
    broken: list[BaseException] = []  # what reading the items raised: the run stops, then it is raised
    timings = array("d")  # latency by call start order; NaN for a call that reported none
    inflight: dict[str, asyncio.Future] = {}  # calls in flight, by material: an item like one waits for it
    first_mode: dict[int, str | None] = {}  # each judge's output mode before its first call: the cache's
    called_judges: dict[int, Judge] = {}  # judges that made a call, in the order of their first
    remembered: dict[int, str | None] = {}

    def pull() -> tuple[int, WorkItem] | None:
        if broken:
            return None
        try:
            entry = next(source, None)
        except Exception as exc:  # noqa: BLE001 - raised once the calls in flight are stored
            broken.append(exc)
            return None
        if entry is not None:
            summary.items += 1
            first_mode.setdefault(id(entry[1].judge), getattr(entry[1].judge, "output_mode", None))
        return entry

    def hit(index: int, item: WorkItem, material: str) -> bool:
        """Answer ``item`` from an answer stored before this run; False when there is none."""
        if refresh or results.was_called(material):
            return False
        row = serve_from_cache(item, rubric, store, item.key_for(first_mode[id(item.judge)]))
        if row is None:
            return False
        summary.cache_hits += 1
        results[index] = _result(item, "cache", row)
        bar.update(summary)
        return True

    def remember(judge: Judge, mode: str | None) -> None:
        """Store the mode that worked for (model, api_base) once it changes, for the next run."""
        if not mode or not hasattr(judge, "start_from") or remembered.get(id(judge)) == mode:
            return
        api_base = getattr(judge, "api_base", None)
        if store.remembered_mode(judge.model, api_base) != mode:
            store.remember_mode(judge.model, api_base, mode)
        remembered[id(judge)] = mode

    limiters: dict[int, AdaptiveLimiter] = {}

    def limiter_for(judge: Judge) -> AdaptiveLimiter:
        """One adaptive in-flight limit per judge (each model / endpoint has its own rate limit)."""
        limiter = limiters.get(id(judge))
        if limiter is None:
            limiter = limiters[id(judge)] = AdaptiveLimiter(max(1, concurrency))
        return limiter

    async def call_one(index: int, item: WorkItem) -> bool:
        """Make and store one call; False when a fatal error stops the run."""
        seq = len(timings)
        timings.append(float("nan"))
        called_judges.setdefault(id(item.judge), item.judge)
        started = now_utc()
        try:
            with use_limiter(limiter_for(item.judge)):  # this task only: the judge's requests take its slots
                ann = await item.judge.annotate(item.bundle, rubric)
        except JudgeFatalError as exc:
            summary.fatal = summary.fatal or str(exc)
            summary.failures += 1
            if exc.annotation is not None:
                summary.requests += exc.annotation.attempts
                store.record_call(_call_row(item, rubric, exc.annotation, started))
            results[index] = _result(item, "call", None, str(exc))
            bar.update(summary)
            return False
        if ann.latency_ms is not None:
            timings[seq] = ann.latency_ms
        results[index] = record_answer(item, rubric, store, ann, started, summary)
        # the mode is about the server: one that answered (even with an invalid reply) is kept
        remember(
            item.judge, getattr(item.judge, "accepted_mode", None) or (ann.output_mode if ann.status == "ok" else None)
        )
        bar.update(summary)
        return True

    def stopping() -> bool:
        if summary.fatal or broken or (max_cost is not None and summary.cost_usd >= max_cost):
            if summary.fatal is None and summary.stopped is None and not broken:
                summary.stopped = (
                    f"--max-cost ${max_cost:.4f} reached (spent ${summary.cost_usd:.4f} then); no new calls were "
                    "started, and the calls already sent finished (the cost line counts them too)"
                )
            return True
        return False

    async def worker() -> None:
        while not stopping():
            entry = pull()
            if entry is None:
                return
            index, item = entry
            material = _material(item)
            if hit(index, item, material):
                continue
            if results.was_called(material):  # same bundle, judge and rubric as a call in this run: reuse it
                leader = inflight.get(material)
                if leader is not None:
                    await leader
                row = serve_from_cache(item, rubric, store)
                if row is not None:
                    summary.shared += 1
                    results[index] = _result(item, "shared", row)
                    bar.update(summary)
                    continue
            results.mark_called(material)
            done = inflight[material] = asyncio.get_running_loop().create_future()
            try:
                if not await call_one(index, item):
                    return
            finally:
                if inflight.get(material) is done:
                    del inflight[material]
                if not done.done():
                    done.set_result(None)

    width = max(1, concurrency)
    if isinstance(items, Sized):
        width = min(width, len(items) or 1)
    await asyncio.gather(*(asyncio.create_task(worker()) for _ in range(width)))
    if broken:
        results.close()
        raise broken[0]
    for index, item in source:  # not started: answered from the cache when it can be, else not run
        summary.items += 1
        first_mode.setdefault(id(item.judge), getattr(item.judge, "output_mode", None))
        if not hit(index, item, _material(item)):
            summary.not_run += 1
            results[index] = _result(item, "not_run", None, summary.fatal or summary.stopped)
    summary.latencies_ms.extend(lat for lat in timings if lat == lat)
    for limiter in limiters.values():
        summary.rate_limited += limiter.rate_limited
        if limiter.lowest < limiter.maximum:
            low = summary.concurrency_lowest
            summary.concurrency_lowest = limiter.lowest if low is None else min(low, limiter.lowest)
    for judge in called_judges.values():
        summary.notes.extend(getattr(judge, "notes", None) or [])
    if bar.enabled and bar.total:
        bar.update(summary, force=True)
    return results, summary


def run_sync(coro: Any):
    return asyncio.run(coro)
