"""Output shapes of `evalkit score`: table, markdown, csv, json, jsonl.

Per-run output is streamed as each card is scored (memory does not grow with the number of files);
aggregates are printed at the end. Tables show 3 decimals and ``-`` for null; JSON keeps floats
unrounded and null for missing values.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any, TextIO

from evalkit.scorecard import ScoreCard

FORMATS = ("table", "json", "jsonl", "csv", "markdown")
RUN_COLUMNS = (
    "run_id", "scenario_id", "model", "status", "coverage", "order", "end_state", "all_passed",
    "dangerous", "anti_proc", "extraneous", "scalar",
)
RUN_WIDTHS = (40, 22, 18, 14, 8, 6, 9, 10, 9, 9, 10, 7)
GROUP_COLUMNS = (
    "scenario_id", "model", "n", "n_scored", "score_mean", "score_std", "score_median", "coverage_mean",
    "order_mean", "end_state_mean", "pass_rate", "pass_hat_k", "dangerous_rate", "provider_error_rate",
    "invalid_rate", "incomplete_rate", "small_n",
)
MODEL_COLUMNS = ("model", "scenarios", "n", "n_scored", "score_mean", "pass_rate", "pass_hat_k", "dangerous_rate", "small_n")


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list):
        return " ".join(fmt(v) for v in value) if value else "-"
    return str(value)


def run_row(card: ScoreCard) -> list[Any]:
    v = card.vector
    return [
        card.run_id, card.scenario_id, card.model, card.status, v.coverage, v.order, v.end_state,
        v.all_passed, v.safety_dangerous, v.safety_anti_procedure, v.extraneous, card.scalar,
    ]


def _csv_value(value: Any) -> Any:
    if isinstance(value, list):
        return ";".join(repr(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else value


def _fixed(cells: list[str], widths: tuple[int, ...]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()


def _aligned(headers: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return lines


def _md(headers: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return lines


def card_text(card: ScoreCard, fmt_name: str) -> str:
    """One card's part of the output in a format (a pure function, so it can run in a worker)."""
    if fmt_name == "jsonl":
        return json.dumps(card.to_json_dict(), ensure_ascii=False) + "\n"
    if fmt_name == "json":
        return json.dumps(card.to_json_dict(), ensure_ascii=False)
    if fmt_name == "csv":
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow([_csv_value(v) for v in run_row(card)])
        return buf.getvalue()
    if fmt_name == "markdown":
        return "| " + " | ".join(fmt(v).replace("|", "\\|") for v in run_row(card)) + " |\n"
    return _fixed([fmt(v) for v in run_row(card)], RUN_WIDTHS) + "\n"


class ScoreWriter:
    """Writes cards as they come (unless ``aggregate_only``) and the aggregates at the end."""

    def __init__(self, out: TextIO, fmt_name: str = "table", aggregate_only: bool = False):
        if fmt_name not in FORMATS:
            raise ValueError(f"unknown format {fmt_name!r}")
        self.out = out
        self.format = fmt_name
        self.aggregate_only = aggregate_only
        self._count = 0
        self._csv = csv.writer(out, lineterminator="\n") if fmt_name == "csv" else None

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")

    def card(self, card: ScoreCard) -> None:
        if not self.aggregate_only:
            self.write_text(card_text(card, self.format))

    def write_text(self, text: str) -> None:
        """Write one card already rendered by ``card_text`` (a worker process renders, the parent writes)."""
        if self.aggregate_only:
            return
        first = self._count == 0
        self._count += 1
        if self.format == "json":
            self.out.write(("[\n" if first else ",\n") + text)
            return
        if first:
            if self.format == "csv":
                self._csv.writerow(RUN_COLUMNS)
            elif self.format == "markdown":
                self._line("## Runs\n")
                self._line("| " + " | ".join(RUN_COLUMNS) + " |")
                self._line("|" + "|".join("---" for _ in RUN_COLUMNS) + "|")
            elif self.format == "table":
                self._line("Runs")
                self._line(_fixed(list(RUN_COLUMNS), RUN_WIDTHS))
                self._line("  ".join("-" * w for w in RUN_WIDTHS))
        self.out.write(text)

    def finish(self, result: dict[str, Any]) -> None:
        groups, models = result["groups"], result["models"]
        if self.format == "json":
            if self.aggregate_only:
                self._line(json.dumps(result, ensure_ascii=False, indent=2))
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
                self._csv.writerow(GROUP_COLUMNS)
                for g in groups:
                    self._csv.writerow([_csv_value(g[c]) for c in GROUP_COLUMNS])
            return
        group_rows = [[fmt(g[c]) for c in GROUP_COLUMNS] for g in groups]
        model_rows = [[fmt(m[c]) for c in MODEL_COLUMNS] for m in models]
        note = "provider_error runs included in means" if result["include_errors"] else "provider_error runs excluded from means"
        if self.format == "markdown":
            self._line("" if self._count else "")
            self._line("## By scenario and model\n")
            for line in _md(GROUP_COLUMNS, group_rows):
                self._line(line)
            self._line("\n## By model (each scenario weighted equally)\n")
            for line in _md(MODEL_COLUMNS, model_rows):
                self._line(line)
            self._line(f"\n_{note}; small_n = fewer than 3 scored runs._")
            return
        if self._count:
            self._line("")
        self._line("By scenario and model")
        for line in _aligned(GROUP_COLUMNS, group_rows):
            self._line(line)
        self._line("")
        self._line("By model (each scenario weighted equally)")
        for line in _aligned(MODEL_COLUMNS, model_rows):
            self._line(line)
        self._line("")
        self._line(f"note: {note}; small_n = fewer than 3 scored runs (never report a single run as a result)")
