"""Judge configuration: configs/judge.toml merged with overrides, validated by pydantic models.

Precedence (later wins, tables merge key by key): the shipped configs/judge.toml, the user's file
(the explicit one, else the EVALKIT_JUDGE_CONFIG environment variable, else .evalkit/judge.toml: the
discovery and merge rule of every configuration, `evalkit.config.files`), then a dict of overrides
(the Python API's `config=`; tests use it to make backoff tiny).

Files are read and validated by evalkit's one config loader (`evalkit.config.files`): every table is
a pydantic model that forbids unknown keys, so a misspelt key (`request.max_tokns`) is a one-line
`ConfigError` naming the file and the key path, never a silently ignored setting.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from evalkit.config.files import ConfigError, ConfigModel, load_layered, validate
from evalkit.config.resources import data_dir
from evalkit.judges.output_modes import AUTO, MODES

__all__ = ["ConfigError", "JudgeConfig", "JudgeFile", "load_config", "ENV_VAR"]

ENV_VAR = "EVALKIT_JUDGE_CONFIG"
OutputMode = Literal[(AUTO, *MODES)]  # type: ignore[valid-type]  # the modes, named once


class RequestTable(ConfigModel):
    temperature: float = 0.0
    max_tokens: int = Field(1024, ge=1)
    rationale_max_chars: int = Field(800, ge=1)
    timeout_s: float = Field(120.0, gt=0)
    reply_max_bytes: int = Field(4 * 2**20, ge=1)
    rationale_limit_chars: int = Field(20_000, ge=1)
    concurrency: int = Field(4, ge=1)
    reask: int = Field(1, ge=0)
    output_mode: OutputMode = "auto"
    max_input_tokens: int | None = Field(None, ge=1)


class RetryTable(ConfigModel):
    attempts: int = Field(5, ge=1)
    initial_wait_s: float = Field(1.0, ge=0)
    max_wait_s: float = Field(60.0, ge=0)
    jitter_s: float = Field(1.0, ge=0)
    max_retry_after_s: float = Field(120.0, ge=0)


class PriceEntry(ConfigModel):
    input_per_mtok: float = Field(0.0, ge=0)
    output_per_mtok: float = Field(0.0, ge=0)
    cached_input_per_mtok: float | None = Field(None, ge=0)  # unset: cached input at the input price
    batch_factor: float = Field(0.5, gt=0, le=1)  # batch price = this x live (both providers bill half)


class BatchTable(ConfigModel):
    poll_s: float = Field(30.0, gt=0)
    max_requests: int = Field(50_000, ge=1)  # per batch file (OpenAI's limit; Anthropic's is 100,000)
    max_file_bytes: int = Field(190 * 2**20, ge=1)  # per batch file, under OpenAI's 200 MB
    max_wait_s: float = Field(86_400.0, gt=0)  # give up polling after this long (the 24 h window)


class JudgeFile(ConfigModel):
    default_rubric: str = "procedure_v1"
    request: RequestTable = RequestTable()
    retry: RetryTable = RetryTable()
    batch: BatchTable = BatchTable()
    prices: dict[str, PriceEntry] = {}


@dataclass(frozen=True)
class JudgeConfig:
    """The validated :class:`JudgeFile` flattened for the judge: ``[request]`` and ``[retry]`` keys
    by their names, ``[batch]`` keys prefixed ``batch_``. Every default and bound is
    :class:`JudgeFile`'s (its tables'); :func:`load_config` makes the one instance."""

    default_rubric: str
    temperature: float
    max_tokens: int
    rationale_max_chars: int
    timeout_s: float  # one attempt, whole: connect, headers and body
    reply_max_bytes: int  # a longer reply is not read further (a judge_error)
    rationale_limit_chars: int  # a longer rationale makes the reply invalid
    concurrency: int
    reask: int
    output_mode: str
    max_input_tokens: int | None
    attempts: int
    initial_wait_s: float
    max_wait_s: float
    jitter_s: float
    max_retry_after_s: float
    batch_poll_s: float
    batch_max_requests: int
    batch_max_file_bytes: int
    batch_max_wait_s: float
    prices: dict

    def price_for(self, *models: str) -> tuple[float, float] | None:
        """(input, output) USD per million tokens for the first model a price entry matches.

        Exact keys win over glob patterns (`ollama/*`)."""
        entry = self.price_entry(*models)
        return None if entry is None else (float(entry["input_per_mtok"]), float(entry["output_per_mtok"]))

    def price_entry(self, *models: str) -> dict | None:
        """The whole `[prices]` entry for the first model one matches (exact keys first)."""
        for model in models:
            if model in self.prices:
                return self.prices[model]
        for model in models:
            for pattern in sorted(self.prices):
                if fnmatch.fnmatchcase(model, pattern):
                    return self.prices[pattern]
        return None

    def priced(
        self, models: tuple[str, ...], prompt: int, cached: int, completion: int, batch: bool = False
    ) -> float | None:
        """USD for one call by the `[prices]` entry (None when no entry matches): cached input at
        its own price, everything at `batch_factor` of the live price in a batch."""
        entry = self.price_entry(*models)
        if entry is None:
            return None
        price_in = float(entry["input_per_mtok"])
        price_cached = entry.get("cached_input_per_mtok")
        price_cached = price_in if price_cached is None else float(price_cached)
        cached = min(max(cached, 0), prompt)
        usd = (
            (prompt - cached) * price_in + cached * price_cached + completion * float(entry["output_per_mtok"])
        ) / 1e6
        return usd * float(entry["batch_factor"]) if batch else usd


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(path: str | os.PathLike | None = None, overrides: dict | None = None) -> JudgeConfig:
    # the discovery and merge rule every configuration follows (evalkit.config.files)
    raw, source = load_layered("judge", path, what="judge config", shipped=data_dir("configs") / "judge.toml")
    if overrides:
        raw = _merge(raw, overrides)
    parsed = validate(JudgeFile, raw, source)
    # a key added to a table reaches JudgeConfig with no line here (and one field there)
    return JudgeConfig(
        default_rubric=parsed.default_rubric,
        **parsed.request.model_dump(),
        **parsed.retry.model_dump(),
        **{f"batch_{key}": value for key, value in parsed.batch.model_dump().items()},
        prices={name: entry.model_dump() for name, entry in parsed.prices.items()},
    )
