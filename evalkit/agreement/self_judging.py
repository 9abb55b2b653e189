"""Self-judging: a judge model grading runs of the agent model it is (self-preference bias).

LLM judges favour their own outputs (Panickssery et al. 2024, "LLM Evaluators Recognize and Favor
Their Own Generations"), so evalkit flags every judgement where the judge and the judged agent are
the same model. The bundle a judge sees stays blind either way: this is a flag on the results,
never information given to the judge.

Two model names are the same model when their keys are equal. The key (:func:`model_key`) is the
name lowercased, after the last ``/`` (provider and router prefixes: ``openai/``,
``openrouter/anthropic/``), after a plugin judge's ``PREFIX:`` when the name has no ``/``, and
without a trailing ``-latest`` or release date (``-2024-08-06``, ``-20241022``): so
``openai/gpt-4o``, ``gpt-4o`` and ``GPT-4o-2024-08-06`` are one model. A false alarm costs a warning;
a missed one costs a biased audit, so the rule leans towards matching.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

_SUFFIX = re.compile(r"-(?:latest|\d{4}-\d{2}-\d{2}|\d{8})$")


def model_key(name: str) -> str:
    """The provider-free, date-free, lowercase key two names of one model share."""
    key = name.strip().lower()
    if "/" in key:
        key = key.rsplit("/", 1)[1]
    elif ":" in key:
        prefix, rest = key.split(":", 1)
        # a plugin judge (PREFIX:model); but keep ollama-style tags (llama3:8b) whole
        if rest and not rest[0].isdigit():
            key = rest
    return _SUFFIX.sub("", key)


def same_model(judge_model: str, agent_model: str) -> bool:
    return bool(judge_model) and bool(agent_model) and model_key(judge_model) == model_key(agent_model)


def self_judged_runs(judge_models: Iterable[str], agent_models: Iterable[str]) -> dict[str, int]:
    """For each judge model, how many of the runs (one agent model per run) it would judge are its own."""
    counts = Counter(model_key(m) for m in agent_models if m)
    return {j: counts[model_key(j)] for j in sorted(set(judge_models)) if counts.get(model_key(j))}


def warning_lines(judge_models: Iterable[str], agent_models: Iterable[str]) -> list[str]:
    """One warning per self-judging judge model (none when there is none)."""
    return [
        f"warning: judge {judge} would judge {n} run(s) of its own model ({model_key(judge)}): LLM judges "
        f"favour their own outputs, so the audit flags these pairs; --allow-self-judging silences this"
        for judge, n in self_judged_runs(judge_models, agent_models).items()
    ]


def pairing_note(entry: dict) -> str | None:
    """One line for an audit pairing with self-judged pairs: how many, by whom, and its agreement
    without them (the audit's ``self_judging`` block); None when it has none."""
    flagged = entry.get("self_judging") or {}
    if not flagged.get("pairs"):
        return None
    without = flagged.get("without") or {}

    def value(key: str) -> str:
        stat = without.get(key)
        v = stat.get("value") if isinstance(stat, dict) else stat
        return "n/a" if v is None else f"{v:.2f}"

    return (
        f"{entry.get('pairing')}: {flagged['pairs']} of {entry.get('n')} pairs self-judged "
        f"({', '.join(flagged.get('judges', []))} judging its own model's runs); without them: "
        f"n {without.get('n', 0)}, agreement {value('percent_agreement')}, kappa {value('cohen_kappa')}"
    )
