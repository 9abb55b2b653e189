"""The probes' names have one home, evalkit.agreement.probe_names (below the probes and the audit,
which both read them): the transforms are keyed by it, the API re-exports it lazily, and
`evalkit probe --help` lists exactly those names without loading the transforms (nor the
trajectory model, nor pydantic)."""

from __future__ import annotations

import re

from click.testing import CliRunner
from loaded_modules import loaded_after

from evalkit.agreement import probe_names as names


def test_the_transforms_are_the_registrys_names_in_its_order():
    from evalkit.probes import FOOLING_PROBES, PROBES
    from evalkit.probes.transforms import TRANSFORMS

    assert tuple(TRANSFORMS) == names.PROBES == PROBES
    assert all(TRANSFORMS[name].__name__ == name for name in names.PROBES)
    assert FOOLING_PROBES is names.FOOLING_PROBES and set(FOOLING_PROBES) <= set(PROBES)


def test_the_gates_statistics_and_pipeline_read_the_same_names():
    from evalkit.agreement import probe_stats
    from evalkit.probes import gates, pipeline

    assert gates.PROBES is probe_stats.PROBES is pipeline.PROBES is names.PROBES
    assert probe_stats.FOOLING_PROBES is names.FOOLING_PROBES


def test_probe_help_lists_exactly_the_registrys_names():
    import evalkit.cli

    res = CliRunner().invoke(evalkit.cli.cli, ["probe", "--help"], terminal_width=400)
    assert res.exit_code == 0, res.output
    listed = re.search(r"Comma-separated probes \(default all: ([^)]*)\)\.", res.output)
    assert listed is not None, res.output
    assert tuple(listed.group(1).split(",")) == names.PROBES


def test_the_names_module_imports_nothing():
    package = set(loaded_after("import evalkit", "evalkit", "pydantic"))
    loaded = set(loaded_after("import evalkit.agreement.probe_names", "evalkit", "pydantic"))
    assert loaded - package == {"evalkit.agreement", "evalkit.agreement.probe_names"}


def test_the_cli_and_probe_help_leave_the_transforms_unloaded():
    code = (
        "from click.testing import CliRunner\nimport evalkit.cli\n"
        "assert CliRunner().invoke(evalkit.cli.cli, ['probe', '--help']).exit_code == 0"
    )
    heavy = ("evalkit.probes.transforms", "evalkit.probes.cases", "evalkit.trajectory", "pydantic")
    assert loaded_after("import evalkit.cli", *heavy) == []
    assert loaded_after(code, *heavy) == []
