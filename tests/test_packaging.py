"""The built wheel (not only an editable install) carries configs/ and prompts/ and finds them, and
installs the judge layer as `evalkit.judges`, beside any other distribution's top-level `judges`."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def pip(*args: str) -> None:
    """``pip ARGS``, offline (local sources and wheels only), which must succeed."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", *args, "--no-deps", "--no-index", "-q"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def build_wheel(src: Path, out: Path, name: str) -> Path:
    pip("wheel", str(src), "--no-build-isolation", "-w", str(out))
    return next(out.glob(f"{name}-*.whl"))


def install(whl: Path, target: Path) -> None:
    """``whl`` into the site directory ``target`` (no bytecode: nothing here runs long enough to need it)."""
    pip("install", "--target", str(target), "--upgrade", "--no-compile", str(whl))


def probe_json(code: str, target: Path, cwd: Path):
    """What ``code``, run with ``target`` first on sys.path, prints as JSON."""
    prelude = "import json, sys; sys.path.insert(0, sys.argv[1]);"
    out = subprocess.run([sys.executable, "-c", prelude + code, str(target)], capture_output=True, text=True, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    pytest.importorskip("hatchling")
    return build_wheel(ROOT, tmp_path_factory.mktemp("wheel"), "evalkit")


def test_wheel_contains_data_and_both_packages(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for sub in ("configs", "prompts"):
        for f in (ROOT / sub).iterdir():
            if f.is_file():
                assert f"evalkit/_data/{sub}/{f.name}" in names
    assert "evalkit/cli.py" in names and "evalkit/judges/__init__.py" in names
    judges = sorted(p.name for p in (ROOT / "judges").glob("*.py"))
    assert sorted(n.split("/")[-1] for n in names if n.startswith("evalkit/judges/") and n.endswith(".py")) == judges
    assert not any(n.startswith(("tests/", "judges/")) for n in names)  # no top-level judges package


def test_installed_wheel_finds_its_data(wheel, tmp_path):
    target = tmp_path / "site"
    install(wheel, target)
    probe = (
        "from evalkit.config.resources import data_dir;"
        "print(json.dumps({n: str(data_dir(n)) for n in ('configs', 'prompts')}))"
    )
    dirs = probe_json(probe, target, tmp_path)
    for name, path in dirs.items():
        assert Path(path) == target / "evalkit" / "_data" / name
        assert any(Path(path).iterdir())


@pytest.fixture(scope="module")
def dummy_judges_wheel(tmp_path_factory) -> Path:
    """A stand-in for the PyPI distribution `judges`, which owns a top-level `judges/__init__.py`."""
    out = tmp_path_factory.mktemp("dummy")
    src = out / "dummy-src"
    (src / "judges").mkdir(parents=True)
    (src / "judges" / "__init__.py").write_text('WHO = "the other judges distribution"\n')
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "judges"\nversion = "0.0.1"\n[tool.hatch.build.targets.wheel]\npackages = ["judges"]\n'
    )
    return build_wheel(src, out, "judges")


@pytest.mark.parametrize("first", ["evalkit", "judges"])
def test_wheel_installs_beside_another_judges_distribution(wheel, dummy_judges_wheel, tmp_path, first):
    """Installed in either order into one site directory, neither overwrites the other's files:
    `import judges` is the other distribution and `evalkit.judges` is evalkit's judge layer."""
    dummy = dummy_judges_wheel
    target = tmp_path / "site"
    for whl in [wheel, dummy] if first == "evalkit" else [dummy, wheel]:
        install(whl, target)
    probe = (
        "import judges, evalkit.judges.rubrics, evalkit.judges.protocol;"
        "print(json.dumps([judges.WHO, evalkit.judges.rubrics.load_rubric('procedure_v1').id,"
        " evalkit.judges.__file__]))"
    )
    who, rubric, where = probe_json(probe, target, tmp_path)
    assert who == "the other judges distribution" and rubric == "procedure_v1"
    assert Path(where) == target / "evalkit" / "judges" / "__init__.py"
