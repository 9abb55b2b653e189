"""The module paths from before the pipeline became folders keep working, with a DeprecationWarning."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evalkit import _moved


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_module_path_is_the_new_module_and_warns(old):
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        f"new = importlib.import_module({_moved.MOVED[old]!r})\n"
        "try:\n"
        f"    importlib.import_module({old!r})\n"
        "except DeprecationWarning as w:\n"
        "    print('warned:', w)\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        f"assert importlib.import_module({old!r}) is new\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert f"warned: {old} moved to {_moved.MOVED[old]}" in out


def test_submodules_of_a_moved_package_resolve():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import evalkit.aggregate.uncertainty.paired as new
        import evalkit.uncertainty.paired as old
        from evalkit.uncertainty.paired import paired_difference  # noqa: F401
    assert old is new


def test_documented_names_of_split_modules_still_import():
    from evalkit.aggregate import Aggregator
    from evalkit.aggregate.groups import Aggregator as moved
    from evalkit.db import Store  # the old evalkit.storage.Store

    assert Aggregator is moved and Store.__module__ == "evalkit.db.scores"


def test_new_paths_never_warn():
    code = (
        "import warnings\nwarnings.simplefilter('error', DeprecationWarning)\n"
        "import evalkit.trajectory.records, evalkit.scoring.scorecard, evalkit.aggregate.groups, evalkit.api, evalkit.cli\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unknown_names_are_not_invented():
    with pytest.raises(ModuleNotFoundError):
        __import__("evalkit.no_such_module")
