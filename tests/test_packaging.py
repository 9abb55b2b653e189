"""The built wheel (not only an editable install) carries configs/ and prompts/ and finds them."""
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return next(out.glob("evalkit-*.whl"))


def test_wheel_contains_data_and_both_packages(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for sub in ("configs", "prompts"):
        for f in (ROOT / sub).iterdir():
            if f.is_file():
                assert f"evalkit/_data/{sub}/{f.name}" in names
    assert "evalkit/cli.py" in names and "judges/__init__.py" in names
    assert not any(n.startswith("tests/") for n in names)


def test_installed_wheel_finds_its_data(wheel, tmp_path):
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    probe = (
        "import json, sys; sys.path.insert(0, sys.argv[1]);"
        "from evalkit.resources import data_dir;"
        "print(json.dumps({n: str(data_dir(n)) for n in ('configs', 'prompts')}))"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(target)], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    dirs = json.loads(out.stdout)
    for name, path in dirs.items():
        assert Path(path) == target / "evalkit" / "_data" / name
        assert any(Path(path).iterdir())
