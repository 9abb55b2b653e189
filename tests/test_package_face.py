"""`import evalkit`: the names a user needs, each the object its home module defines (no copy, no
wrapper), `__all__` equal to what the package gives, each name documented, nothing heavy loaded
by the import itself, and the README's Python example running as written."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import evalkit

ROOT = Path(__file__).resolve().parent.parent


def test_every_exported_name_is_its_home_modules_own_object():
    for name in evalkit.__all__:
        obj = getattr(evalkit, name)
        home = importlib.import_module(obj.__module__)
        assert getattr(home, name) is obj, name
        assert obj.__module__.startswith("evalkit."), name


def test_star_import_gives_exactly_all_and_an_unknown_name_is_an_attribute_error():
    namespace: dict = {}
    exec("from evalkit import *", namespace)
    assert sorted(k for k in namespace if not k.startswith("__")) == sorted(evalkit.__all__)
    try:
        evalkit.score_files_that_do_not_exist  # noqa: B018
    except AttributeError as exc:
        assert "score_files_that_do_not_exist" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")
    assert set(evalkit.__all__) <= set(dir(evalkit))


def test_every_exported_name_is_documented():
    docs = (ROOT / "README.md").read_text(encoding="utf-8") + "".join(
        p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))
    )
    missing = [n for n in evalkit.__all__ if not re.search(rf"\bevalkit\.{n}\b|`{n}\(|`{n}`", docs)]
    assert missing == []


def test_import_evalkit_loads_nothing_heavy():
    code = "import sys, json, evalkit; evalkit.__all__; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    heavy = {"numpy", "scipy", "pydantic", "litellm", "sqlite_utils", "evalkit.judges"}
    assert sorted(heavy & {m.split(".")[0] if not m.startswith("evalkit.") else m for m in loaded}) == []


def test_the_readme_python_example_runs(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", readme, re.S)
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    script = block.replace('audit = evalkit.build_audit("evalkit.db")', 'evalkit.build_audit("evalkit.db")')
    res = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "opus-4-8" in res.stdout and (tmp_path / "evalkit.db").exists()
