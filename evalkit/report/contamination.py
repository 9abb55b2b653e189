"""The contamination declaration (configs/contamination.toml): what the benchmark owner states about
possible training-data contamination, printed as the report's "Contamination" paragraph."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evalkit.config.files import ConfigModel, load_layered, validate


class ContaminationSpec(ConfigModel):
    declared: bool = False
    declared_by: str = ""
    reviewed: str = ""
    statement: str = ""
    evidence: list[str] = []
    public_sources: list[str] = []


class ContaminationFile(ConfigModel):
    contamination: ContaminationSpec


def load_contamination(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Read the declaration: ``path``, else ``$EVALKIT_CONTAMINATION_CONFIG``, else
    ``.evalkit/contamination.toml``, else the shipped configs/contamination.toml. ConfigError naming
    the file and the key for a bad file."""
    # a declaration is taken whole (the discovery rule of evalkit.config.files, no merge)
    raw, path = load_layered("contamination", path, what="contamination", whole=True)
    if not raw:
        return {
            "declared": False,
            "statement": "",
            "evidence": [],
            "public_sources": [],
            "declared_by": "",
            "reviewed": "",
            "source": None,
        }
    spec = validate(ContaminationFile, raw, path).contamination
    return {
        "declared": spec.declared,
        "declared_by": spec.declared_by.strip(),
        "reviewed": spec.reviewed.strip(),
        "statement": spec.statement.strip(),
        "evidence": [v.strip() for v in spec.evidence if v.strip()],
        "public_sources": [v.strip() for v in spec.public_sources if v.strip()],
        "source": Path(path).name,
    }
