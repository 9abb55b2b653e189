"""Judge configuration: configs/judge.toml merged with overrides.

Precedence (later wins, tables merge key by key): the shipped configs/judge.toml, the file named by
the EVALKIT_JUDGE_CONFIG environment variable, an explicit config file, then a dict of overrides
(the Python API's `config=`; tests use it to make backoff tiny).
"""
from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.resources import data_dir

ENV_VAR = "EVALKIT_JUDGE_CONFIG"


class ConfigError(ValueError):
    """A judge configuration file or value is wrong; the message names the file and key."""


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _read(path: Path) -> dict:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        from judges.rubrics import toml_error

        raise ConfigError(toml_error(str(path), exc)) from None


@dataclass(frozen=True)
class JudgeConfig:
    default_rubric: str = "procedure_v1"
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 120.0
    concurrency: int = 4
    reask: int = 1
    attempts: int = 5
    initial_wait_s: float = 1.0
    max_wait_s: float = 60.0
    jitter_s: float = 1.0
    max_retry_after_s: float = 120.0
    prices: dict = field(default_factory=dict)

    def price_for(self, *models: str) -> tuple[float, float] | None:
        """(input, output) USD per million tokens for the first model a price entry matches.

        Exact keys win over glob patterns (`ollama/*`)."""
        for model in models:
            if model in self.prices:
                entry = self.prices[model]
                return float(entry.get("input_per_mtok", 0.0)), float(entry.get("output_per_mtok", 0.0))
        for model in models:
            for pattern in sorted(self.prices):
                if fnmatch.fnmatchcase(model, pattern):
                    entry = self.prices[pattern]
                    return float(entry.get("input_per_mtok", 0.0)), float(entry.get("output_per_mtok", 0.0))
        return None


_TYPES = {
    ("request", "temperature"): float, ("request", "max_tokens"): int, ("request", "timeout_s"): float,
    ("request", "concurrency"): int, ("request", "reask"): int, ("retry", "attempts"): int,
    ("retry", "initial_wait_s"): float, ("retry", "max_wait_s"): float, ("retry", "jitter_s"): float,
    ("retry", "max_retry_after_s"): float,
}


def load_config(path: str | os.PathLike | None = None, overrides: dict | None = None) -> JudgeConfig:
    shipped = data_dir("configs") / "judge.toml"
    raw: dict[str, Any] = _read(shipped) if shipped.is_file() else {}
    source = str(shipped)
    for extra in (os.environ.get(ENV_VAR), path):
        if extra:
            raw = _merge(raw, _read(Path(extra)))
            source = str(extra)
    if overrides:
        raw = _merge(raw, overrides)
    values: dict[str, Any] = {}
    for (table, key), kind in _TYPES.items():
        if key in raw.get(table, {}):
            value = raw[table][key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{source}: [{table}].{key}: expected a number, got {value!r}")
            values[key] = kind(value)
    if values.get("attempts", 1) < 1:
        raise ConfigError(f"{source}: [retry].attempts: must be at least 1")
    if values.get("reask", 0) < 0:
        raise ConfigError(f"{source}: [request].reask: must be 0 or more")
    if "default_rubric" in raw:
        values["default_rubric"] = str(raw["default_rubric"])
    prices = raw.get("prices", {})
    for name, entry in prices.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{source}: [prices.\"{name}\"]: expected a table")
    values["prices"] = prices
    return JudgeConfig(**values)
