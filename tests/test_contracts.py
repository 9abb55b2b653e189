"""The architecture's import contracts (pyproject.toml, [tool.importlinter]), checked statically
with import-linter: the scoring core stays pure, only one module imports litellm, only the inspect
importer imports inspect_ai, and the judge layer reaches only the parts of evalkit it is allowed to."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the intended rule: the data layer, values, ScoreCard and resources; plus the config loader and
# the error type it raises (judge.toml is validated by evalkit.config.files)
JUDGE_MAY_IMPORT = {
    "evalkit.db",
    "evalkit.trajectory.values",
    "evalkit.scoring.scorecard",
    "evalkit.config.resources",
    "evalkit.config.files",
    "evalkit.config.outbound",  # the one outbound HTTP client
    "evalkit.errors",
    "evalkit.present",
    "evalkit.aggregate.per_call",
    # the one JSON parser and file opener every reader uses
    "evalkit.trajectory.safe_json",
    "evalkit.trajectory.input_files",
}


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def test_import_contracts_hold(monkeypatch, capsys):
    from importlinter.cli import lint_imports

    monkeypatch.chdir(ROOT)
    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{len(_config()['contracts'])} kept, 0 broken" in out


def test_judge_contract_names_every_other_evalkit_module():
    """A new evalkit module must be placed: allowed for the judge layer, or forbidden to it."""
    import evalkit

    contract = next(c for c in _config()["contracts"] if c["source_modules"] == ["evalkit.judges"])
    placed = set(contract["forbidden_modules"]) | JUDGE_MAY_IMPORT | {"evalkit.judges"}
    modules = set()
    for m in pkgutil.iter_modules(evalkit.__path__):
        name = f"evalkit.{m.name}"
        split = m.ispkg and name not in placed and any(p.startswith(name + ".") for p in placed)
        if split:  # a package the rule cuts through: each of its modules must be placed
            package = importlib.import_module(name)
            modules |= {f"{name}.{s.name}" for s in pkgutil.iter_modules(package.__path__)}
        else:
            modules.add(name)
    assert modules - placed == set(), "add the new module to the judge-layer contract in pyproject.toml"


def test_a_broken_contract_is_reported(tmp_path):
    """The contracts can fail: a scoring module importing the audit, even lazily, is caught."""
    pkg = tmp_path / "evalkit"
    (pkg / "agreement").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "agreement" / "__init__.py").write_text("")
    (pkg / "scoring.py").write_text("def f():\n    from evalkit.agreement import stats\n")
    (tmp_path / "setup.cfg").write_text(
        "[importlinter]\nroot_package = evalkit\n\n[importlinter:contract:core]\nname = core\n"
        "type = forbidden\nsource_modules = evalkit.scoring\nforbidden_modules = evalkit.agreement\n"
    )
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint), "--config", "setup.cfg", "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(tmp_path)),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "evalkit.scoring -> evalkit.agreement" in done.stdout


def test_nothing_imports_the_top_level_judges_name():
    """The judge layer is `evalkit.judges`; importing it as `judges` too would load every module
    twice (two registries, two error classes) and break beside the PyPI `judges` distribution."""
    import re

    bad = re.compile(r"^\s*(from judges[. ]|import judges\b)", re.M)
    hits = []
    for base in ("evalkit", "judges", "tests", "benchmarks", "examples"):
        for f in (ROOT / base).rglob("*.py"):
            if "judges" in f.relative_to(ROOT).parts[1:2] and base == "evalkit":
                continue  # evalkit/judges is the symlink to judges/
            if bad.search(f.read_text(encoding="utf-8")):
                hits.append(f.relative_to(ROOT).as_posix())
    assert hits == []


def test_checkout_imports_the_judge_layer_through_the_symlink():
    import evalkit.judges.api

    assert (ROOT / "evalkit" / "judges").is_symlink()
    assert Path(evalkit.judges.api.__file__).resolve() == (ROOT / "judges" / "api.py").resolve()
