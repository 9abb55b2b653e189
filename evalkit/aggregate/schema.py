"""The JSON Schema of the aggregate (``evalkit score --aggregate --format json``,
``evalkit.aggregate.groups.aggregate``).

Written out rather than generated: the aggregate is a plain dict built in :mod:`evalkit.aggregate.groups`.
Rows allow no other field, so a field added to the aggregate without its line here fails
tests/test_schemas.py. Published as docs/schemas/aggregate.json (``evalkit schema aggregate``).
"""

from __future__ import annotations

from typing import Any

_RATE = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
_SE = {"type": ["number", "null"], "minimum": 0}
_INTERVAL = {"type": ["array", "null"], "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
_CURVE = {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}}
_REASONS = {
    "type": "object",
    "additionalProperties": {"type": "string"},
    "description": "metric -> why its standard error is undefined (null)",
}

# (field, description) of the means and rates that carry <field>_se and <field>_ci
_WITH_BARS = [
    ("score_mean", "mean scalar of the included runs that have one"),
    ("coverage_mean", "mean coverage"),
    ("order_mean", "mean order score of the runs that have one"),
    ("end_state_mean", "mean end-state score"),
    ("pass_rate", "share of included runs whose all_passed is true (the harness's success)"),
    ("dangerous_rate", "share of included runs with a dangerous forbidden command"),
    ("safe_pass_rate", "share of included runs that passed and took no forbidden command of any severity"),
    (
        "anti_procedure_rate",
        "share of included runs with an anti_procedure forbidden command (unapproved gated actions included)",
    ),
    ("unsafe_rate", "share of included runs with a forbidden command of any severity"),
]


def _bars(name: str, description: str) -> dict[str, Any]:
    return {name: dict(_RATE, description=description), f"{name}_se": _SE, f"{name}_ci": _INTERVAL}


def _row(fields: dict[str, Any], title: str) -> dict[str, Any]:
    return {
        "type": "object",
        "title": title,
        "properties": fields,
        "required": sorted(fields),
        "additionalProperties": False,
    }


def _group() -> dict[str, Any]:
    fields: dict[str, Any] = {
        "scenario_id": {"type": "string", "description": "<scenario_id>@<scenario_hash> when one id has two contents"},
        "scenario_hash": {"type": "string"},
        "model": {"type": "string"},
        "n": {"type": "integer", "minimum": 0, "description": "every run of the group"},
        "n_scored": {
            "type": "integer",
            "minimum": 0,
            "description": "the included runs (status scored, + provider_error with include_errors)",
        },
        "score_std": {"type": ["number", "null"]},
        "score_median": {"type": ["number", "null"]},
        "pass_hat_k": dict(_CURVE, description="C(c, k) / C(n_scored, k), c the passing runs, k = 1..n_scored"),
        "safe_pass_hat_k": dict(_CURVE, description="pass^k of the safe passes: every one of k runs passed safely"),
        "provider_error_rate": _RATE,
        "invalid_rate": _RATE,
        "incomplete_rate": _RATE,
        "small_n": {"type": "boolean", "description": "fewer than 3 included runs"},
        "unsafe_uncounted": {
            "type": "integer",
            "minimum": 0,
            "description": "runs left out of the rates (incomplete, provider_error without include_errors) that "
            "took a forbidden command: --max-unsafe-rate counts them as unsafe runs",
        },
        "se_reasons": _REASONS,
    }
    for name, description in _WITH_BARS:
        fields.update(_bars(name, description))
    return _row(fields, "Group")


def _model() -> dict[str, Any]:
    curve_se = {"type": ["array", "null"], "items": {"type": "number"}}
    curve_ci = {"type": ["array", "null"], "items": _INTERVAL}
    fields: dict[str, Any] = {
        "model": {"type": "string"},
        "scenarios": {"type": "integer", "minimum": 0},
        "n": {"type": "integer", "minimum": 0},
        "n_scored": {"type": "integer", "minimum": 0},
        "pass_hat_k": dict(_CURVE, description="mean over scenarios, k up to the smallest n_scored"),
        "pass_hat_k_se": curve_se,
        "pass_hat_k_ci": curve_ci,
        "safe_pass_hat_k": dict(_CURVE, description="safe pass^k, mean over scenarios as pass_hat_k"),
        "safe_pass_hat_k_se": curve_se,
        "safe_pass_hat_k_ci": curve_ci,
        "small_n": {"type": "boolean", "description": "some scenario has fewer than 3 included runs"},
        "unsafe_uncounted": {"type": "integer", "minimum": 0, "description": "the groups' unsafe_uncounted, summed"},
        "se_method": {"type": "string"},
        "se_reasons": _REASONS,
    }
    for name, description in _WITH_BARS:
        fields.update(_bars(name, description + ", mean over scenarios"))
    return _row(fields, "Model")


def aggregate_json_schema() -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Aggregate",
        "description": "Per (scenario, model) groups and the per-model rollup (each scenario weighted equally), "
        "with their error bars; docs/uncertainty.md and docs/glossary.md say which rate to quote.",
        "type": "object",
        "properties": {
            "include_errors": {"type": "boolean"},
            "uncertainty": {
                "type": "object",
                "additionalProperties": False,
                "required": ["group_se", "level", "model_se", "pass_hat_k"],
                "properties": {
                    "level": {"type": "number"},
                    "group_se": {"type": "string"},
                    "model_se": {"type": "string"},
                    "pass_hat_k": {"type": "string"},
                },
            },
            "groups": {"type": "array", "items": _group()},
            "models": {"type": "array", "items": _model()},
        },
        "required": ["groups", "include_errors", "models", "uncertainty"],
        "additionalProperties": False,
    }
