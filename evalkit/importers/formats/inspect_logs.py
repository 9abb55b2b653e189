"""inspect_ai evaluation logs (``.eval`` / ``.json``) → evalkit trajectories, and their scores → ratings.

Logs are read only through inspect_ai's own reader (``read_eval_log`` with
``resolve_attachments=True``; ``.eval`` samples one at a time with ``read_eval_log_samples``), so
every log version, attachment and message-deduplication form it supports works. inspect_ai is
imported inside the functions, never at module level: ``evalkit import --list`` and the score path
do not pay for it.

Mapping (documented in docs/importers.md, "Coming from inspect_ai"):

* one run per (sample, epoch); run_id ``<task>:<sample id>:epoch<n>:<eval id>``; scenario
  ``<task>/<sample id>`` with the sample input as ``task_prompt`` and the target as
  ``ground_truth.target``; model ``eval.model``;
* messages: ``system`` → ``instructions_profile`` (a sha256 prefix), ``user`` → ``nudge``,
  ``assistant`` → ``assistant`` + ``tool_call`` records, ``tool`` → the result of the call it answers
  (``is_error`` when inspect recorded a tool error). A call no tool message answers never ran:
  ``is_error``, result null. Every tool is a read unless the sample's metadata lists
  ``command_tools``;
* end state: the outcome scorer's value (``--outcome-scorer``, default the first deterministic
  scorer) passes when its credit (evalkit.agreement.credit: C 1, P 0.5, I/N 0, numbers as is) is
  at least ``--outcome-threshold`` (default 1.0: full credit). A sample without that score (an
  errored sample inspect did not score) has no end state and is reported ``incomplete``;
* final reason: ``harness_error`` for a sample error, ``budget_<kind>`` / ``limit_<kind>`` for a
  limit (see LIMIT_REASONS), else ``agent_done``;
* ratings: every scorer's value on every sample: rater = scorer name, kind ``judge`` for
  model-graded scorers (KNOWN_JUDGE_SCORERS plus ``--judge-scorers``) else ``mechanical``;
  dimension ``value`` (a dict value: one dimension per key); plus dimension ``outcome``
  (``pass``/``fail`` by the same threshold) for every scalar value with a credit, so an evalkit
  judge's ``outcome`` is compared with every scorer; confidence from ``metadata.confidence``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from evalkit.agreement.credit import credit
from evalkit.importers import Converted, ImportFormatError
from evalkit.importers.options import ImportOption

FORMAT_VERSION = "inspect/1"
KNOWN_JUDGE_SCORERS = frozenset({"model_graded_qa", "model_graded_fact"})
DEFAULT_THRESHOLD = 1.0
ERROR_CHARS = 500
# Limits that are budgets (scoring treats a `budget_` reason as "ran out", as for its own budgets).
LIMIT_REASONS = {
    "message": "budget_messages",
    "token": "budget_tokens",
    "turn": "budget_turns",
    "time": "budget_time",
    "working": "budget_working_time",
    "cost": "budget_cost",
    "context": "budget_context",
}
INSTALL_HINT = "format inspect needs inspect_ai: pip install 'evalkit[inspect]'"


class InspectUnavailable(Exception):
    """inspect_ai is not installed."""


def _inspect_log() -> Any:
    try:
        import inspect_ai.log as log
    except ImportError:
        raise InspectUnavailable(INSTALL_HINT) from None
    return log


class _SampleError(Exception):
    pass


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def _local(name: str) -> str:
    parsed = urlparse(name)
    return unquote(parsed.path) if parsed.scheme == "file" else name


def _names(value: Any) -> frozenset[str]:
    if value is None:
        return frozenset()
    items = value.split(",") if isinstance(value, str) else list(value)
    return frozenset(s.strip() for s in items if s.strip())


class InspectImporter:
    name = "inspect"
    summary = "inspect_ai logs (.eval, .json, or directories of them); scorers become ratings"
    cli_options = (
        ImportOption(
            "outcome_scorer",
            "the scorer whose value is the end state (default: the first deterministic one)",
            metavar="NAME",
        ),
        ImportOption(
            "judge_scorers",
            "comma-separated scorers that are model-graded (besides the known built-ins)",
            metavar="NAMES",
        ),
        ImportOption(
            "outcome_threshold", "credit a value needs to pass (default 1.0; C=1, P=0.5, I=0)", "float", metavar="X"
        ),
    )
    ratings = True

    def require(self) -> None:
        """Raise InspectUnavailable when inspect_ai is not installed (the CLI turns it into a usage error)."""
        _inspect_log()

    def expand(self, directory: str) -> list[str]:
        """The inspect_ai logs in ``directory`` (recursively, as inspect_ai lists them), sorted by path."""
        infos = _inspect_log().list_eval_logs(str(Path(directory).resolve()), recursive=True)
        paths = sorted(_local(i.name) for i in infos)
        if not paths:
            raise ImportFormatError(directory, None, "no inspect_ai logs (*.eval, *.json) in this directory")
        return [os.path.relpath(p) if not os.path.isabs(directory) else p for p in paths]

    def convert(
        self,
        path: str,
        outcome_scorer: str | None = None,
        judge_scorers: Any = None,
        outcome_threshold: float | None = None,
    ) -> Converted:
        log = _inspect_log()
        threshold = DEFAULT_THRESHOLD if outcome_threshold is None else float(outcome_threshold)
        try:
            if path.endswith(".eval"):
                header = log.read_eval_log(path, header_only=True)
                samples = self._eval_samples(log, path, header)
            else:
                header = log.read_eval_log(path, resolve_attachments=True)
                samples = iter(header.samples or [])
        except Exception as exc:  # inspect_ai raises many types for a corrupt file
            raise ImportFormatError(path, None, f"not a readable inspect_ai log: {_first_line(exc)}") from None
        ctx = _LogContext(path, header, outcome_scorer, _names(judge_scorers), threshold)
        out = Converted([])
        while True:
            try:
                sample = next(samples)
            except StopIteration:
                break
            except Exception as exc:  # a damaged sample entry: the log cannot be trusted as a whole
                raise ImportFormatError(path, None, f"cannot read a sample: {_first_line(exc)}") from None
            try:
                run, ratings = ctx.sample_run(sample)
            except _SampleError as exc:
                out.errors.append(ImportFormatError(path, None, f"sample {sample.id!r} epoch {sample.epoch}: {exc}"))
                continue
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                out.errors.append(
                    ImportFormatError(
                        path, None, f"sample {sample.id!r} epoch {sample.epoch}: cannot convert: {_first_line(exc)}"
                    )
                )
                continue
            out.runs.append(run)
            out.ratings.extend(ratings)
        if not out.runs and not out.errors:
            raise ImportFormatError(path, None, "the log has no samples")
        return out

    @staticmethod
    def _eval_samples(log: Any, path: str, header: Any) -> Iterator[Any]:
        if header.eval.dataset.sample_ids is None:  # an old log without the sample list: read it whole
            return iter(log.read_eval_log(path, resolve_attachments=True).samples or [])
        return iter(log.read_eval_log_samples(path, all_samples_required=False, resolve_attachments=True))


IMPORTER = InspectImporter()


class _LogContext:
    """What every sample of one log shares: task, model, scorers and their kinds, the outcome rule."""

    def __init__(self, path: str, header: Any, outcome: str | None, judges: frozenset[str], threshold: float):
        spec = header.eval
        self.path = path
        self.source = os.path.basename(path)
        self.task = spec.task
        self.log_id = spec.eval_id or spec.task_id or Path(path).stem
        self.model = spec.model
        self.judges = judges
        self.threshold = threshold
        names = [s.name for s in (spec.scorers or [])]
        if not names and header.results is not None:
            names = list(dict.fromkeys(s.scorer for s in header.results.scores))
        self.scorers = names
        if outcome is not None:
            if outcome not in names:
                raise ImportFormatError(
                    path,
                    None,
                    f"--outcome-scorer {outcome!r} is not a scorer of this log (scorers: {', '.join(names) or 'none'})",
                )
            self.outcome = outcome
        else:
            self.outcome = next((n for n in names if not self.is_judge(n)), None)

    def is_judge(self, scorer: str) -> bool:
        short = scorer.rsplit("/", 1)[-1]
        return (
            scorer in KNOWN_JUDGE_SCORERS
            or short in KNOWN_JUDGE_SCORERS
            or scorer in self.judges
            or short in self.judges
        )

    def sample_run(self, sample: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        run_id = f"{self.task}:{sample.id}:epoch{sample.epoch}:{self.log_id}"
        transcript = _Transcript(sample)
        scores = sample.scores or {}
        success_eval = None
        if self.outcome is not None and self.outcome in scores:
            value = scores[self.outcome].value
            c = credit(value)
            if c is None:
                raise _SampleError(
                    f"outcome scorer {self.outcome!r} gave {value!r}, which has no pass/fail meaning "
                    "(choose another with --outcome-scorer)"
                )
            ok = c >= self.threshold
            check = {"var": f"inspect.scores.{self.outcome}", "op": ">=", "value": self.threshold, "passed": ok}
            success_eval = {"final_state": [check], "ecam_clear_of": [], "all_passed": ok}
        metadata = sample.metadata or {}
        commands = metadata.get("command_tools")
        if commands is not None and (not isinstance(commands, list) or not all(isinstance(c, str) for c in commands)):
            raise _SampleError("metadata.command_tools must be a list of tool names")
        scenario = {
            "id": f"{self.task}/{sample.id}",
            "title": f"inspect_ai {self.task} sample {sample.id}",
            "task_prompt": _prompt(sample.input),
            "ground_truth": {
                "source": "inspect_ai",
                "procedure": [],
                "optional_actions": [],
                "forbidden_actions": [],
                "target": sample.target,
            },
            "success": {
                "final_state": (
                    [{"var": f"inspect.scores.{self.outcome}", "op": ">=", "value": self.threshold}]
                    if self.outcome
                    else []
                ),
                "ecam_clear_of": [],
            },
            "budget": {"max_tool_calls": None, "max_sim_time_s": None},
            "command_tools": sorted(set(commands or [])),
            "inspect": {"task": self.task, "sample_id": sample.id, "choices": sample.choices},
        }
        profile = None
        if transcript.system:
            digest = hashlib.sha256("\n\n".join(transcript.system).encode("utf-8")).hexdigest()[:16]
            profile = f"inspect/{self.task}/system-sha256:{digest}"
        meta = {
            "type": "meta",
            "run_id": run_id,
            "ts_utc": sample.started_at or None,
            "scenario": scenario,
            "scenario_path": f"{self.source}#{sample.id}",
            "adapter": {"provider": self.model.split("/", 1)[0] if "/" in self.model else None, "model": self.model},
            "instructions_profile": profile,
            "tool_surface": transcript.surface,
            "vendor_pin": None,
            "versions": {"importer": FORMAT_VERSION},
            "seed": None,
            "inspect": {"log": self.source, "eval_id": self.log_id, "sample_id": sample.id, "epoch": sample.epoch},
        }
        setup = {
            "type": "setup",
            "sim_time": 0,
            "validity_gate": {"passed": True},
            "active_failures": [],
            "snapshot": None,
        }
        reason, payload = _ending(sample)
        final = {
            "type": "final",
            "reason": reason,
            "done_payload": {"inspect": payload},
            "sim_time": transcript.steps,
            "tool_calls_used": transcript.tool_calls,
            "ecam": [],
            "active_failures": [],
            "snapshot": None,
            "success_eval": success_eval,
        }
        return [meta, setup, *transcript.events, final], self._ratings(run_id, scores)

    def _ratings(self, run_id: str, scores: dict[str, Any]) -> list[dict[str, Any]]:
        rows = []
        names = [n for n in self.scorers if n in scores] + sorted(set(scores) - set(self.scorers))
        for name in names:
            score = scores[name]
            kind = "judge" if self.is_judge(name) else "mechanical"
            conf = (score.metadata or {}).get("confidence")
            value = score.value
            dims = value if isinstance(value, dict) else {"value": value}
            for dim, v in dims.items():
                if v is None:
                    continue
                label = _label(name, dim, v)
                row = {"item_id": run_id, "rater": name, "rater_kind": kind, "dimension": str(dim), "value": label}
                c = conf.get(dim) if isinstance(conf, dict) else conf
                if isinstance(c, (int, float)) and not isinstance(c, bool) and 0.0 <= c <= 1.0:
                    row["confidence"] = float(c)
                rows.append(row)
            if not isinstance(value, dict) and credit(value) is not None:
                outcome = "pass" if credit(value) >= self.threshold else "fail"
                row = {"item_id": run_id, "rater": name, "rater_kind": kind, "dimension": "outcome", "value": outcome}
                if isinstance(conf, (int, float)) and not isinstance(conf, bool) and 0.0 <= conf <= 1.0:
                    row["confidence"] = float(conf)
                rows.append(row)
        return rows


def _label(scorer: str, dim: Any, v: Any) -> Any:
    """A score value as a rating label: scalars as they are, a list or object as its canonical JSON
    text (as the audit reads structured values). NaN/inf cannot be a label."""
    if isinstance(v, float) and not math.isfinite(v):
        raise _SampleError(f"scorer {scorer!r} gave {v!r} on {dim!r}, which cannot be a rating")
    if isinstance(v, (list, dict)):
        return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if isinstance(v, str) and not v.strip():
        raise _SampleError(f"scorer {scorer!r} gave an empty value on {dim!r}")
    return v


def _prompt(value: Any) -> str | None:
    """The sample input as text: a string as is; a message list as its user messages' text."""
    if isinstance(value, str):
        return value
    texts = [m.text for m in value or [] if getattr(m, "role", None) == "user" and m.text]
    return "\n\n".join(texts) or None


def _ending(sample: Any) -> tuple[str, dict[str, Any]]:
    payload: dict[str, Any] = {}
    if sample.output is not None and sample.output.choices:
        payload["stop_reason"] = sample.output.stop_reason
    if sample.error is not None:
        payload["error"] = sample.error.message[:ERROR_CHARS]
        return "harness_error", payload
    if sample.limit is not None:
        payload["limit"] = {"type": sample.limit.type, "limit": sample.limit.limit}
        return LIMIT_REASONS.get(sample.limit.type, f"limit_{sample.limit.type}"), payload
    return "agent_done", payload


class _Transcript:
    """A sample's messages as trajectory events (see the module docstring)."""

    def __init__(self, sample: Any):
        self.events: list[dict[str, Any]] = []
        self.system: list[str] = []
        self.steps = 0
        self.tool_calls = 0
        pending: list[tuple[str | None, dict[str, Any]]] = []
        last_assistant = None
        for mi, m in enumerate(sample.messages):
            role = m.role
            if role == "system":
                self.system.append(m.text)
            elif role == "user":
                self.events.append({"type": "nudge", "step": self.steps, "text": m.text})
            elif role == "assistant":
                self.steps += 1
                calls = m.tool_calls or []
                last_assistant = {
                    "type": "assistant",
                    "step": self.steps,
                    "text": m.text,
                    "stop_reason": "tool_use" if calls else "end_turn",
                    "provider_raw": m.model_dump(mode="json", exclude_none=True),
                }
                self.events.append(last_assistant)
                for ci, call in enumerate(calls):
                    if not isinstance(call.arguments, dict):
                        raise _SampleError(
                            f"message {mi}, tool call {ci} ({call.function}): arguments are not an object"
                        )
                    record = {
                        "type": "tool_call",
                        "step": self.steps,
                        "call_index": ci,
                        "name": call.function,
                        "args": call.arguments,
                        "result": None,
                        "is_error": True,  # until a tool message answers it: never executed
                        "sim_time_before": self.steps - 1,
                        "sim_time_after": self.steps,
                        "wall_ms": None,
                    }
                    self.events.append(record)
                    self.tool_calls += 1
                    pending.append((call.id, record))
            elif role == "tool":
                record = _answered(m, pending)
                if record is None:
                    raise _SampleError(f"message {mi}: tool result answers no pending tool call")
                error = m.error
                record["is_error"] = error is not None
                record["result"] = m.text if error is None else f"{error.type}: {error.message}"
            else:
                raise _SampleError(f"message {mi}: unknown role {role!r}")
        if last_assistant is not None and sample.output is not None and sample.output.choices:
            # the sample's output is its last generation: inspect's own stop reason for it
            last_assistant["stop_reason"] = sample.output.stop_reason
        self.surface = _surface(sample, self.events)


def _answered(message: Any, pending: list[tuple[str | None, dict[str, Any]]]) -> dict[str, Any] | None:
    for i, (call_id, _record) in enumerate(pending):
        if message.tool_call_id is not None and call_id == message.tool_call_id:
            return pending.pop(i)[1]
    if message.tool_call_id is None:  # old logs: the oldest unanswered call of that function
        for i, (_, record) in enumerate(pending):
            if record["name"] == getattr(message, "function", None):
                return pending.pop(i)[1]
    return None


def _surface(sample: Any, events: list[dict[str, Any]]) -> list[str]:
    """The tools offered to the model (its model events' tool lists); without model events, the
    tools called (nothing is then off-surface)."""
    offered: set[str] = set()
    seen_model = False
    for event in sample.events or []:
        if getattr(event, "event", None) == "model":
            seen_model = True
            offered.update(t.name for t in event.tools or [])
    if not seen_model:
        offered = {e["name"] for e in events if e["type"] == "tool_call"}
    return sorted(offered)
