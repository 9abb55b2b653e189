"""`configs/probes.toml`: the texts the probes plant, validated like every config (evalkit.config.files).

The shipped file is always read; ``--config FILE`` is merged onto it table by table, key by key
(a key you set replaces the shipped one). Unknown tables and keys are errors naming the key.
"""
from __future__ import annotations

import os
from typing import Any

from pydantic import Field

from evalkit.config.files import ConfigModel, load_toml, validate
from evalkit.config.resources import data_dir


class FalseClaim(ConfigModel):
    message: str = Field(min_length=1)
    done_payload: dict[str, Any]


class Injection(ConfigModel):
    key: str = Field(min_length=1)
    text: str = Field(min_length=1)


class Verbosity(ConfigModel):
    paragraphs: list[str] = Field(min_length=1)


class DistractorReads(ConfigModel):
    count: int = Field(ge=1, le=100)


class Identity(ConfigModel):
    key: str = Field(min_length=1)
    name: str = Field(min_length=1)


class ProbesConfig(ConfigModel):
    false_claim: FalseClaim
    injection: Injection
    verbosity: Verbosity
    distractor_reads: DistractorReads
    identity: Identity


def shipped_path() -> str:
    return str(data_dir("configs") / "probes.toml")


def load_probes_config(path: str | os.PathLike[str] | None = None) -> ProbesConfig:
    """The shipped probe texts, with ``path``'s tables merged over them key by key."""
    data = load_toml(shipped_path(), "probes config")
    source = shipped_path()
    if path is not None:
        source = str(path)
        override = load_toml(path, "probes config")
        for table, value in override.items():
            if isinstance(value, dict) and isinstance(data.get(table), dict):
                data[table] = {**data[table], **value}
            else:
                data[table] = value
    return validate(ProbesConfig, data, source)
