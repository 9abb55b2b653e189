"""Output shapes of `evalkit score`: table, markdown, csv, json, jsonl.

Per-run output is streamed as each card is scored (memory does not grow with the number of files);
aggregates are printed at the end. Tables show 3 decimals and ``-`` for null; JSON keeps floats
unrounded and null for missing values.

The table format fits a terminal: given a ``width`` (``$COLUMNS``, else 120: see
:func:`terminal_width`) each table keeps the columns that fit, chosen in the order of its
``*_PRIORITY`` (who, then the vector and safety, then the rest), shown in their usual order, and a
note names the ones left out. Without a width (``--wide``) every column is shown. Markdown shows
every column; csv and json are always complete.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import textwrap
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TextIO

from evalkit.present import CsvRows, MarkdownRows, Table, TextRows, csv_line, md_text, sanitize
from evalkit.present.table import scalar_text

if TYPE_CHECKING:  # writing what workers rendered needs no card model (the parent never loads it)
    from evalkit.scoring.scorecard import ScoreCard

FORMATS = ("table", "json", "jsonl", "csv", "markdown", "junit")
# A run's vector and safety counts: the runs table shows them after who, and keeps them first after the run id.
_RUN_VECTOR = ("coverage", "order", "end_state", "all_passed", "dangerous", "anti_proc")
RUN_COLUMNS = ("run_id", "scenario_id", "model", "status") + _RUN_VECTOR + ("extraneous", "scalar")
RUN_WIDTHS = (40, 22, 18, 14, 8, 6, 9, 10, 9, 9, 10, 7)
RUN_PRIORITY = ("run_id",) + _RUN_VECTOR + ("scalar", "model", "status", "extraneous", "scenario_id")
# A group's who and score vector, then its pass rate: every group column list starts with them.
_GROUP_HEAD = (
    "scenario_id",
    "model",
    "n",
    "n_scored",
    "score_mean",
    "score_mean_ci",
    "score_std",
    "score_median",
    "coverage_mean",
    "order_mean",
    "end_state_mean",
    "pass_rate",
    "pass_rate_ci",
)
# The safety gate's figures as the tables show them, beside the pass rate (groups and models alike).
_SAFETY_COLUMNS = (
    "safe_pass_rate",
    "safe_pass_rate_ci",
    "unsafe_rate",
    "unsafe_rate_ci",
    "pass_hat_k",
    "safe_pass_hat_k",
    "dangerous_rate",
    "anti_procedure_rate",
)
# The CSV keeps its earlier columns in their earlier places; the safety gate's columns follow them.
SAFETY_CSV_COLUMNS = (
    "safe_pass_rate",
    "safe_pass_rate_ci",
    "safe_pass_hat_k",
    "unsafe_rate",
    "unsafe_rate_ci",
    "anti_procedure_rate",
    "unsafe_uncounted",
)
GROUP_COLUMNS = (
    _GROUP_HEAD
    + ("pass_hat_k", "dangerous_rate", "provider_error_rate", "invalid_rate", "incomplete_rate", "small_n")
    + SAFETY_CSV_COLUMNS
)
# Tables show the safe pass rate and the unsafe rate beside the pass rate.
GROUP_TABLE_COLUMNS = (
    _GROUP_HEAD
    + _SAFETY_COLUMNS
    + ("provider_error_rate", "invalid_rate", "incomplete_rate", "small_n", "unsafe_uncounted")
)
# What a narrow table keeps first, after who: the rates, then (_PRIORITY_TAIL) the rest of the safety figures,
# the pass^k values and the intervals.
_PRIORITY_RATES = ("pass_rate", "safe_pass_rate", "unsafe_rate")
_PRIORITY_TAIL = (
    "dangerous_rate",
    "anti_procedure_rate",
    "n",
    "pass_hat_k",
    "safe_pass_hat_k",
    "pass_rate_ci",
    "safe_pass_rate_ci",
    "unsafe_rate_ci",
    "score_mean_ci",
)
GROUP_PRIORITY = (
    ("scenario_id", "model")
    + _PRIORITY_RATES
    + ("coverage_mean", "order_mean", "end_state_mean", "n_scored", "small_n", "score_mean")
    + _PRIORITY_TAIL
    + ("score_std", "score_median", "provider_error_rate", "invalid_rate", "incomplete_rate", "unsafe_uncounted")
)
MODEL_COLUMNS = (
    ("model", "scenarios", "n", "n_scored", "score_mean", "score_mean_ci", "pass_rate", "pass_rate_ci")
    + _SAFETY_COLUMNS
    + ("small_n", "unsafe_uncounted")
)
MODEL_PRIORITY = (
    ("model",)
    + _PRIORITY_RATES
    + ("n_scored", "small_n", "score_mean", "scenarios")
    + _PRIORITY_TAIL
    + ("unsafe_uncounted",)
)
DEFAULT_WIDTH = 120


def __getattr__(name: str) -> Any:
    # card_head_json is still importable from here, loaded when asked for
    if name == "card_head_json":
        from evalkit.scoring.scorecard import card_head_json

        return card_head_json
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def terminal_width() -> int:
    """``$COLUMNS`` when it is a positive whole number, else 120. The terminal itself is not asked:
    the same environment gives the same output, whether it goes to a terminal, a pipe or a file."""
    text = os.environ.get("COLUMNS", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_WIDTH


def fit_columns(
    columns: Sequence[str], widths: Sequence[int] | Callable[[str], int], priority: Sequence[str], width: int
) -> tuple[str, ...]:
    """The columns (in ``columns`` order) whose widths, two spaces apart, fit in ``width``: taken in
    ``priority`` order, each that still fits (the first always). ``widths``: in ``columns`` order,
    or a function of a column's name, never below the name's length (its header), asked only for
    a column whose name still fits."""
    size = widths if callable(widths) else dict(zip(columns, widths)).__getitem__
    lazy = callable(widths)
    kept: set[str] = set()
    used = 0
    for column in priority:
        if lazy and kept and used + 2 + len(column) > width:  # too wide whatever its cells
            continue
        need = size(column) + (2 if kept else 0)
        if not kept or used + need <= width:
            kept.add(column)
            used += need
    return tuple(c for c in columns if c in kept)


class Interval(tuple):
    """A ``[low, high]`` confidence interval as a table shows it: ``[0.412, 0.788]``."""


def _cell(row: dict[str, Any], column: str) -> Any:
    value = row[column]
    return Interval(value) if column.endswith("_ci") and value is not None else value


# A group of 1,000 rollouts has 1,000 pass^k values: a table cell shows the first few (tau-bench
# reports k up to its trial count, usually <= 8); csv and json keep every value.
PASS_HAT_K_SHOWN = 8


def fmt(value: Any) -> str:
    if type(value) is float:  # most cells
        return f"{value:.3f}"
    if isinstance(value, Interval):
        return f"[{fmt(value[0])}, {fmt(value[1])}]"
    if isinstance(value, list):
        if not value:
            return "-"
        shown = " ".join(fmt(v) for v in value[:PASS_HAT_K_SHOWN])
        hidden = len(value) - PASS_HAT_K_SHOWN
        return shown + (f" +{hidden} more (csv/json)" if hidden > 0 else "")
    return scalar_text(value)


def run_row(card: ScoreCard) -> list[Any]:
    v = card.vector
    return [
        card.run_id,
        card.scenario_id,
        card.model,
        card.status,
        v.coverage,
        v.order,
        v.end_state,
        v.all_passed,
        v.safety_dangerous,
        v.safety_anti_procedure,
        v.extraneous,
        card.scalar,
    ]


def run_columns(width: int | None) -> tuple[str, ...]:
    """The runs table's columns at ``width`` (None: all of them)."""
    return RUN_COLUMNS if width is None else fit_columns(RUN_COLUMNS, RUN_WIDTHS, RUN_PRIORITY, width)


@lru_cache(maxsize=8)
def _run_text(columns: tuple[str, ...]) -> tuple[TextRows, tuple[int, ...]]:
    picked = tuple(RUN_COLUMNS.index(c) for c in columns)
    return TextRows(columns, [RUN_WIDTHS[i] for i in picked]), picked


def _csv_value(value: Any) -> Any:
    if isinstance(value, list):
        return ";".join(repr(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


RUNS_TEXT = TextRows(RUN_COLUMNS, RUN_WIDTHS)
RUNS_MARKDOWN = MarkdownRows(RUN_COLUMNS)


# A piece of output: a text, or (text, stop) for ``text[:stop]`` without copying a long text.
Part = str | tuple[str, int]


def join_parts(parts: tuple[Part, ...]) -> str:
    return "".join(p if isinstance(p, str) else p[0][: p[1]] for p in parts)


def _json_parts(card: ScoreCard, head: str | None, end: str) -> tuple[Part, ...]:
    if head is None:
        from evalkit.scoring.scorecard import card_head_json

        head = card_head_json(card)
    # the head without its closing brace, by reference: the database keeps the head itself
    return ((head, len(head) - 1), ',"judge_bundle":', card.bundle.json, "}" + end)


def card_json(card: ScoreCard, head: str | None = None) -> str:
    """The card as compact UTF-8 JSON: its head (``card_head_json``, given when the caller has it)
    with the bundle's text spliced in as the last key, as ``model_dump_json`` would write it — the
    bundle, most of a long run's card, is serialised once, when it is built."""
    return join_parts(_json_parts(card, head, ""))


def card_parts(
    card: ScoreCard, fmt_name: str, head: str | None = None, columns: tuple[str, ...] | None = None
) -> tuple[Part, ...]:
    """One card's part of the output in a format, in pieces (a pure function, so it can run in a
    worker). Joined (:func:`join_parts`) they are :func:`card_text`; kept apart, a long run's
    head and bundle text are written as they are instead of being copied into one string.
    ``columns``: the table format's columns (:func:`run_columns`; None: all)."""
    if fmt_name == "jsonl":
        return _json_parts(card, head, "\n")
    if fmt_name == "json":
        return _json_parts(card, head, "")
    if fmt_name == "csv":
        return (csv_line([_csv_value(v) for v in run_row(card)]),)
    if fmt_name == "markdown":
        return (RUNS_MARKDOWN.row([fmt(v) for v in run_row(card)]) + "\n",)
    if fmt_name == "junit":
        from evalkit.present.score_junit import run_line

        return (run_line(card),)
    if columns is not None and columns != RUN_COLUMNS:
        emit, picked = _run_text(columns)
        row = run_row(card)
        return (emit.row([fmt(row[i]) for i in picked]) + "\n",)
    return (RUNS_TEXT.row([fmt(v) for v in run_row(card)]) + "\n",)


def card_text(card: ScoreCard, fmt_name: str, head: str | None = None) -> str:
    """One card's part of the output in a format."""
    return join_parts(card_parts(card, fmt_name, head))


WRITE_CHUNK = 1 << 20  # characters per write of a long part: the stream encodes each write whole


class Repeats:
    """What `evalkit score` says once: an error met by many files (a scenario's problem reaches every
    run of it) and the warning that a run's embedded scenario differs from the file's (the same for
    every run of it); :meth:`summary` then says how many more there were."""

    _EMBEDDED = ": warning: the embedded scenario "
    _CONTENTS = ("warning: scenario ", " occurs with different content (")  # evalkit.aggregate.groups

    def __init__(self) -> None:
        self.errors: dict[str, int] = {}
        self.embedded: dict[str, int] = {}
        # scenario id (as written) -> its last "different content" line after the first (None: only the first)
        self.contents: dict[str, str | None] = {}

    def first(self, message: str) -> bool:
        """Count an error's message; whether it is the first of its kind."""
        self.errors[message] = self.errors.get(message, 0) + 1
        return self.errors[message] == 1

    def once_per_scenario(self, line: str) -> bool:
        """Whether ``line`` repeats an embedded-scenario warning already said, or says again that a
        scenario occurs with different content (each new content names them all): then it is
        counted, and :meth:`summary` says the rest."""
        if line.startswith(self._CONTENTS[0]) and (end := line.find(self._CONTENTS[1])) > 0:
            scenario = line[len(self._CONTENTS[0]) : end]
            repeated = scenario in self.contents
            self.contents[scenario] = line if repeated else None
            return repeated
        at = line.find(self._EMBEDDED)
        if at < 0:
            return False
        key = line[at + len(": warning: ") :]
        self.embedded[key] = self.embedded.get(key, 0) + 1
        return self.embedded[key] > 1

    def summary(self) -> list[str]:
        out = [f"error: {n - 1:,} more file(s) with the same error: {m}" for m, n in self.errors.items() if n > 1]
        out += [f"warning: {n - 1:,} more run(s) where {m}" for m, n in self.embedded.items() if n > 1]
        # a scenario whose contents kept coming: the last line, which names them all
        out += [last for last in self.contents.values() if last is not None]
        return out


class ScoreWriter:
    """Writes cards as they come (unless ``aggregate_only``) and the aggregates at the end.

    ``width``: the table format's tables keep to it (None: every column, ``--wide``); the cards
    given to :meth:`write_text` must be rendered with :attr:`run_columns`.
    """

    def __init__(
        self,
        out: TextIO,
        fmt_name: str = "table",
        aggregate_only: bool = False,
        width: int | None = None,
        gates: dict[str, float | None] | None = None,
    ):
        if fmt_name not in FORMATS:
            raise ValueError(f"unknown format {fmt_name!r}")
        self.out = out
        self.format = fmt_name
        self.aggregate_only = aggregate_only
        self.width = width if fmt_name == "table" else None
        self.run_columns = run_columns(self.width)
        self._count = 0
        self._csv = CsvRows(out) if fmt_name == "csv" else None
        self.gates = gates or {}  # junit: the gates its cases fail
        self._junit: list[str] = []  # junit: each run's line (score_junit.run_line), kept for the end
        self._unscored: list[tuple[str, str]] = []  # junit: each input that could not be scored, and why

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")

    def card(self, card: ScoreCard) -> None:
        if not self.aggregate_only:
            self.write_text(card_parts(card, self.format, columns=self.run_columns))

    def _write(self, parts: tuple[Part, ...]) -> None:
        for part in parts:
            text, stop = (part, len(part)) if isinstance(part, str) else part
            if stop == len(text) and stop <= WRITE_CHUNK:
                self.out.write(text)
            else:
                for i in range(0, stop, WRITE_CHUNK):
                    self.out.write(text[i : min(i + WRITE_CHUNK, stop)])

    def write_text(self, text: str | tuple[Part, ...]) -> None:
        """Write one card already rendered by ``card_text`` or ``card_parts`` (a worker process
        renders, the parent writes)."""
        if self.aggregate_only:
            return
        parts = (text,) if isinstance(text, str) else text
        if self.format == "junit":
            self._count += 1
            self._junit += "".join(p if isinstance(p, str) else p[0][: p[1]] for p in parts).splitlines()
            return
        first = self._count == 0
        self._count += 1
        if self.format == "json":
            self.out.write("[\n" if first else ",\n")
            self._write(parts)
            return
        if first:
            if self.format == "csv":
                self._csv.row(RUN_COLUMNS)
            elif self.format == "markdown":
                self._line("## Runs\n")
                for line in RUNS_MARKDOWN.head():
                    self._line(line)
            elif self.format == "table":
                self._line("Runs")
                for line in (_run_text(self.run_columns)[0] if self.width is not None else RUNS_TEXT).head():
                    self._line(line)
        self._write(parts)

    @property
    def encoding(self) -> str | None:
        """``"utf-8"`` when :meth:`write_batch` may be given UTF-8 bytes: the stream has a binary
        buffer under it, encodes UTF-8 and the platform's line end is ``\n``; else None (text).
        A text stream opened with another ``newline=`` is not told apart (TextIOWrapper does not
        say): bytes go to its buffer untranslated.

        Whatever the stream's error handler: a worker encodes strictly and sends text instead when
        that fails (a lone surrogate), and where strict encoding succeeds every handler gives the
        same bytes. That matters: Python's stdout uses ``surrogateescape`` under the C and
        C.UTF-8 locales (most containers), and text costs the parent its encoding and the pipe."""
        encoding = getattr(self.out, "encoding", None)
        if getattr(self.out, "buffer", None) is None or not isinstance(encoding, str) or os.linesep != "\n":
            return None
        try:
            return "utf-8" if codecs.lookup(encoding).name == "utf-8" else None
        except LookupError:
            return None

    def write_batch(self, data: Any, count: int) -> None:
        """Write ``count`` cards rendered by ``card_parts`` and joined by a worker (json: with
        ``,\n`` between them): bytes in :attr:`encoding`, text, or the bytes a pool's worker left
        in a file (``copy_to(binary stream)``, evalkit.engines.spool); the same output as giving
        each card to :meth:`write_text`."""
        if self.aggregate_only or not count:
            return
        if self.format == "junit":  # kept, not written: the document is written at the end
            if not isinstance(data, (str, bytes)):
                buffer = io.BytesIO()
                data.copy_to(buffer)
                data = buffer.getvalue()
            self._junit += (data.decode("utf-8") if isinstance(data, bytes) else data).splitlines()
            self._count += count
            return
        self.write_text("")  # what comes before the first card, or between two
        self._count += count - 1
        if isinstance(data, str):
            self._write((data,))
        elif isinstance(data, bytes):
            self.out.flush()
            self.out.buffer.write(data)
        else:  # a worker's file of the bytes (evalkit.engines.spool.Spooled): the kernel copies it
            self.out.flush()
            data.copy_to(self.out.buffer)

    @property
    def aggregates(self) -> str | None:
        """What :meth:`finish` reads of the aggregate: "full" (json and jsonl with ``aggregate_only``
        print every field), "tables" (the tables, csv's groups: no pass^k bootstrap), "shown" (a
        table cut to a width: no error bar, :meth:`finish` adds those of the columns it keeps) or
        None (json, jsonl and csv per run print none of it)."""
        if self.format in ("json", "jsonl"):
            return "full" if self.aggregate_only else None
        if self.format == "csv":
            return "tables" if self.aggregate_only else None
        return "shown" if self.width is not None and self.format == "table" else "tables"

    def input_error(self, path: str, reason: str) -> None:
        """An input that could not be scored (said on stderr as ``reason``): junit gives it a case
        in error, so a CI system shows it; the other formats hold scored runs only."""
        if self.format == "junit":
            self._unscored.append((path, reason))

    def finish(self, result: dict[str, Any] | None, add_errors: Callable[[list[str]], None] | None = None) -> None:
        """The end of the output: the aggregates (``result``, as :attr:`aggregates` asks; None
        where it asks for none). ``add_errors``: for a "shown" aggregate, adds the error bars of
        the metrics named (``evalkit.engines.pipeline.Scoring.add_errors``)."""
        if result is None:
            result = {"groups": [], "models": [], "include_errors": False}
        groups, models = result["groups"], result["models"]
        if self.format == "junit":
            from evalkit.present.score_junit import junit_xml

            self.out.write(junit_xml(result, self._junit, self.gates, self._unscored))
            return
        if self.format == "json":
            if self.aggregate_only:
                self._line(indented_json(result))
            else:
                self._line("[" if self._count == 0 else "")
                self._line("]")
            return
        if self.format == "jsonl":
            if self.aggregate_only:
                for g in groups:
                    self._line(json.dumps({"kind": "group", **g}, ensure_ascii=False))
                for m in models:
                    self._line(json.dumps({"kind": "model", **m}, ensure_ascii=False))
            return
        if self.format == "csv":
            if self.aggregate_only:
                self._csv.row(GROUP_COLUMNS)
                for g in groups:
                    self._csv.row([_csv_value(g[c]) for c in GROUP_COLUMNS])
            return
        if not groups:  # nothing was scored: the errors said why, and empty tables say nothing
            return
        group_table = _table(GROUP_TABLE_COLUMNS, groups, GROUP_PRIORITY, self.width, add_errors)
        model_table = _table(MODEL_COLUMNS, models, MODEL_PRIORITY, self.width, add_errors)
        note = (
            "provider_error runs included in means"
            if result["include_errors"]
            else "provider_error runs excluded from means"
        )
        level = f"{100 * result['uncertainty']['level']:g}%"
        note += (
            f"; *_ci = {level} interval (per group over its runs, per model clustered by scenario; "
            "- when it needs 2 runs / 2 scenarios)"
        )
        if uncounted := sum(m.get("unsafe_uncounted") or 0 for m in models):
            note += (
                f"; {uncounted} run(s) left out of the rates (incomplete, provider_error) took a forbidden "
                "command: no rate counts them (unsafe_uncounted), --max-unsafe-rate does"
            )
        if self.format == "markdown":
            self._line("" if self._count else "")
            self._line("## By scenario and model\n")
            for line in group_table.markdown_lines():
                self._line(line)
            self._line("\n## By model (each scenario weighted equally)\n")
            for line in model_table.markdown_lines():
                self._line(line)
            # one emphasis: its own _ and * escaped, or `*_ci`'s underscore would pair with the closing one
            footnote = f"{note}; small_n = fewer than 3 scored runs.".replace("_", "\\_").replace("*", "\\*")
            self._line(f"\n_{footnote}_")
            self._gates_markdown(result)
            return
        if self._count:
            self._line("")
        self._line("By scenario and model")
        for line in group_table.text_lines():
            self._line(line)
        self._line("")
        self._line("By model (each scenario weighted equally)")
        for line in model_table.text_lines():
            self._line(line)
        self._line("")
        note = f"note: {note}; small_n = fewer than 3 scored runs (never report a single run as a result)"
        if self.width is None:
            self._line(note)
            return
        shown = [("groups", GROUP_TABLE_COLUMNS, group_table.headers), ("models", MODEL_COLUMNS, model_table.headers)]
        if self._count:
            shown.insert(0, ("runs", RUN_COLUMNS, self.run_columns))
        left = [(name, [c for c in every if c not in kept]) for name, every, kept in shown]
        left = [(name, cols) for name, cols in left if cols]
        if left:
            note += (
                f"; left out to fit {self.width} columns (--wide shows every column; csv and json have them): "
                + "; ".join(f"{name}: {', '.join(cols)}" for name, cols in left)
            )
        for line in textwrap.wrap(note, self.width, break_on_hyphens=False, subsequent_indent="  "):
            self._line(line)

    def _gates_markdown(self, result: dict[str, Any]) -> None:
        """The gates' verdict under the markdown tables (a CI job summary shows it beside them)."""
        from evalkit.aggregate.gates import MODEL_GATES, model_gate_failure

        on = {name: limit for name, limit in self.gates.items() if limit is not None}
        if not on:
            return
        named = ", ".join(f"`{MODEL_GATES[name].option} {limit:g}`" for name, limit in on.items())
        failure = model_gate_failure(result, **on)
        if failure:
            self._line(f"\n**Gate failed:** {md_text(failure.removeprefix('gate failed: '))}")
        else:
            self._line(f"\n**Gates passed:** {named}")


def indented_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, indent=2)``, byte for byte, made faster. Most of
    that time goes to writing floats (the shortest repr of each), and an aggregate holds few
    distinct ones many times over (pass^k curves, intervals, rates): each distinct value is
    written once here. Values are converted as ``json.JSONEncoder`` converts them (its order of
    type checks, its keys, NaN and the infinities); no check for circular references (an
    aggregate has none: the recursion limit stops one)."""
    return "".join(_Indented().document(value))


class _Indented:
    """One document of :func:`indented_json`: its parts and its floats' texts so far."""

    __slots__ = ("floats", "out")

    def __init__(self) -> None:
        self.floats: dict[float, str] = {}  # never 0.0 (equal to -0.0) nor NaN (equal to nothing)
        self.out: list[str] = []

    def document(self, value: Any) -> list[str]:
        self.value(value, 0)
        return self.out

    def float_text(self, x: float) -> str:
        text = self.floats.get(x)
        if text is None:
            if x != x:
                return "NaN"
            if x == _INF:
                return "Infinity"
            if x == -_INF:
                return "-Infinity"
            text = float.__repr__(x)
            if x:
                self.floats[x] = text
        return text

    def scalar(self, v: Any) -> str | None:
        """``v``'s text, None for a list, tuple or dict (the order of json's type checks)."""
        if isinstance(v, str):
            return _quote(v)
        if v is None:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        if isinstance(v, int):
            return int.__repr__(v)
        if isinstance(v, float):
            return self.float_text(v)
        if isinstance(v, (list, tuple, dict)):
            return None
        return self.scalar(_DEFAULT(v))  # raises TypeError, as json.dumps does

    def value(self, v: Any, level: int) -> None:
        text = self.scalar(v)
        if text is not None:
            self.out.append(text)
        elif isinstance(v, dict):
            self.mapping(v, level)
        else:
            self.sequence(v, level)

    def sequence(self, items: list | tuple, level: int) -> None:
        if not items:
            self.out.append("[]")
            return
        inner = _newline(level + 1)
        separator = "," + inner
        floats = self.floats
        if all(type(x) is float for x in items):  # a curve, an interval: the usual list
            texts = [floats.get(x) or self.float_text(x) for x in items]
            self.out.append("[" + inner + separator.join(texts) + _newline(level) + "]")
            return
        out = self.out
        out.append("[" + inner)
        first = True
        for v in items:
            if first:
                first = False
            else:
                out.append(separator)
            kind = type(v)
            if kind is list:  # an interval of a curve
                self.sequence(v, level + 1)
            elif kind is float:
                out.append(floats.get(v) or self.float_text(v))
            else:
                self.value(v, level + 1)
        out.append(_newline(level) + "]")

    def mapping(self, items: dict, level: int) -> None:
        if not items:
            self.out.append("{}")
            return
        inner = _newline(level + 1)
        separator = "," + inner
        out = self.out
        floats, heads = self.floats, _KEY_HEADS
        out.append("{" + inner)
        first = True
        for key, v in items.items():
            head = heads.get(key) if type(key) is str else None
            if head is None:
                head = _key_head(key)
            if first:
                first = False
            else:
                head = separator + head
            kind = type(v)
            if kind is float:
                out.append(head + (floats.get(v) or self.float_text(v)))
                continue
            if kind is str:
                text = _quote(v)
            elif kind is int:
                text = int.__repr__(v)
            elif kind is list:
                text = None
            else:
                text = self.scalar(v)
            if text is not None:
                out.append(head + text)
                continue
            out.append(head)
            if isinstance(v, dict):
                self.mapping(v, level + 1)
            else:
                self.sequence(v, level + 1)
        out.append(_newline(level) + "}")


def _key_head(key: Any) -> str:
    """A key and the ": " after it, converted as json converts a key."""
    if isinstance(key, str):
        text = key
    elif isinstance(key, float):
        text = _Indented().float_text(key)
    elif key is True:
        text = "true"
    elif key is False:
        text = "false"
    elif key is None:
        text = "null"
    elif isinstance(key, int):
        text = int.__repr__(key)
    else:
        raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")
    head = _quote(text) + ": "
    if type(key) is str and len(_KEY_HEADS) < 4096:
        _KEY_HEADS[key] = head
    return head


_KEY_HEADS: dict[str, str] = {}  # a str key's text and ": ": an aggregate's rows share their keys


try:
    from json.encoder import c_encode_basestring as _quote
except ImportError:  # pragma: no cover - CPython has it
    from json.encoder import py_encode_basestring as _quote
_INF = float("inf")
_DEFAULT = json.JSONEncoder().default


@lru_cache(maxsize=64)
def _newline(level: int) -> str:
    return "\n" + "  " * level


def _table(
    columns: Sequence[str],
    rows: list[dict[str, Any]],
    priority: Sequence[str],
    width: int | None,
    add_errors: Callable[[list[str]], None] | None = None,
) -> Table:
    """The aggregate ``rows`` as a table of ``columns``, cut to ``width`` (None: all); cut, its
    cells hold their text, each value displayed once (it sizes the columns and fills the rows), and
    only the columns whose names fit are displayed: an interval column's values are added
    (``add_errors``) when the rows lack them."""
    if width is None:
        return Table(columns, [[_cell(r, c) for c in columns] for r in rows], display=fmt)
    texts: dict[str, list[str]] = {}

    def size(column: str) -> int:
        interval = column.endswith("_ci")
        if interval and add_errors is not None and rows and column not in rows[0]:
            add_errors([column[: -len("_ci")]])
        cells = texts[column] = _column_text([r[column] for r in rows], interval)
        return max([len(column), *map(len, cells)])

    kept = fit_columns(columns, size, priority, width)
    return Table(kept, [list(row) for row in zip(*(texts[c] for c in kept))], display=str, shown=True)


def _column_text(values: list[Any], interval: bool) -> list[str]:
    """A column of the aggregate as a text table's cells show it (``sanitize(fmt(_cell(...)))``),
    a column of numbers or of intervals of numbers (most of them) formatted in one pass."""
    if not interval and all(v is None or type(v) is float for v in values):
        return ["-" if v is None else f"{v:.3f}" for v in values]
    if not interval and all(type(v) is int for v in values):  # counts: their digits
        return [str(v) for v in values]
    if interval and all(v is None or (type(v[0]) is float and type(v[1]) is float) for v in values):
        return ["-" if v is None else f"[{v[0]:.3f}, {v[1]:.3f}]" for v in values]
    return [sanitize(fmt(Interval(v) if interval and v is not None else v)) for v in values]
