"""`configs/probes.toml`: the texts the probes plant, validated like every config (evalkit.config.files).

The shipped file is always read; ``--probes-config FILE`` is merged onto it table by table, key by key
(a key you set replaces the shipped one). Unknown tables and keys are errors naming the key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field

from evalkit.config.files import ConfigModel, load_layered, validate
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
    """The shipped probe texts with the user's file (``path``, else by the discovery rule of
    :mod:`evalkit.config.files`) merged over them key by key."""
    data, source = load_layered("probes", path, shipped=Path(shipped_path()))
    return validate(ProbesConfig, data, source)
