"""The `evalkit` command line: a thin shell over the Python API.

Each sub-command lives in its own module under evalkit/commands/ and exposes `register(group)`.
Those modules import only click and the standard library at module level, so that `evalkit score`
never pays for numpy, scipy or litellm.

Exit codes (all commands): 0 success; 1 some inputs were bad; 3 a quality gate failed (see the command's
help); 2 usage error (bad flags, missing files, unknown names).
"""
from __future__ import annotations

import importlib

import click

from evalkit import __version__

COMMAND_MODULES = (
    "evalkit.commands.score",
    "evalkit.commands.judge",
    "evalkit.commands.audit",
    "evalkit.commands.verdicts",
    "evalkit.commands.imports",
    "evalkit.commands.report",
    "evalkit.commands.export",
    "evalkit.commands.compare",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalkit")
def cli() -> None:
    """evalkit: deterministic scores for agent trajectories, an optional LLM judge, and audits."""


for _name in COMMAND_MODULES:
    try:
        _mod = importlib.import_module(_name)
    except ModuleNotFoundError as exc:  # a command module not written yet
        if exc.name != _name:
            raise
        continue
    _mod.register(cli)


def main() -> None:
    cli(prog_name="evalkit")
