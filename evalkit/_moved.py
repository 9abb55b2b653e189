"""Old module paths, kept importable with a DeprecationWarning after the pipeline became folders.

``import evalkit.records`` gives the very module object ``evalkit.trajectory.records`` (one module
under two names, so ``isinstance`` and monkeypatching agree); only the first import of an old name
warns. The finder sits at the front of ``sys.meta_path`` (so a moved package's submodules are not
found again, under the old name, through the package's new ``__path__``) and answers only for the
names below: for every other name it returns None at once.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings

MOVED = {
    "evalkit.records": "evalkit.trajectory.records",
    "evalkit.scenario": "evalkit.trajectory.scenario",
    "evalkit.values": "evalkit.trajectory.values",
    "evalkit.reader": "evalkit.trajectory.reader",
    "evalkit.bundle": "evalkit.trajectory.bundle",
    "evalkit.safe_json": "evalkit.trajectory.safe_json",
    "evalkit.input_files": "evalkit.trajectory.input_files",
    "evalkit.testing": "evalkit.trajectory.builders",
    "evalkit.scorecard": "evalkit.scoring.scorecard",
    "evalkit.per_call": "evalkit.aggregate.per_call",
    "evalkit.uncertainty": "evalkit.aggregate.uncertainty",
    "evalkit.atomic": "evalkit.output.atomic",
    "evalkit.parquet": "evalkit.output.parquet",
    "evalkit.render": "evalkit.present.score_view",
    "evalkit.exitcodes": "evalkit.commands.exitcodes",
    "evalkit.configfile": "evalkit.config.files",
    "evalkit.resources": "evalkit.config.resources",
    "evalkit.self_judging": "evalkit.agreement.self_judging",
    "evalkit.storage": "evalkit.db",
    "evalkit.agreement.probes": "evalkit.probes.stats",
    "evalkit.judges.probe": "evalkit.judges.probe_runner",
    "evalkit.probes.api": "evalkit.probes.pipeline",
    "evalkit.agreement.paired": "evalkit.agreement.judge_vs_mechanical",
    "evalkit.agreement.pairings": "evalkit.agreement.pairings_config",
    "evalkit.agreement.compare": "evalkit.agreement.label_comparison",
    "evalkit.agreement.render": "evalkit.agreement.audit_output",
    "evalkit.agreement.stats.encoding": "evalkit.agreement.stats.stat",
    "evalkit.importers.anthropic_messages": "evalkit.importers.formats.anthropic_messages",
    "evalkit.importers.inspect_logs": "evalkit.importers.formats.inspect_logs",
    "evalkit.importers.messages": "evalkit.importers.formats.messages",
    "evalkit.importers.openai_messages": "evalkit.importers.formats.openai_messages",
    "evalkit.importers.otel": "evalkit.importers.formats.otel",
    "evalkit.importers.otel_receiver": "evalkit.importers.formats.otel_receiver",
    "evalkit.importers.tau2": "evalkit.importers.formats.tau2",
    "evalkit.importers.taubench": "evalkit.importers.formats.taubench",
}
# packages whose submodules moved with them
MOVED_PACKAGES = ("evalkit.uncertainty",)


def new_name(old: str) -> str | None:
    if old in MOVED:
        return MOVED[old]
    for package in MOVED_PACKAGES:
        if old.startswith(package + "."):
            return MOVED[package] + old[len(package) :]
    return None


class _Alias:  # a loader by protocol: importlib.abc costs ~15 ms of start-up to import
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self.target}; the old name will be removed",
            DeprecationWarning,
            stacklevel=2,
        )
        # the import machinery returns whatever sys.modules holds under the old name afterwards
        sys.modules[module.__name__] = importlib.import_module(self.target)


class _Finder:  # a meta path finder by protocol (find_spec)
    def find_spec(self, fullname, path=None, target=None):
        target_name = new_name(fullname)
        if target_name is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(target_name))


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def names_from(package: str, target: str):  # unannotated: importing typing would slow every start
    """A package's ``__getattr__`` for the names of the module it replaced, now in ``target``: each is
    looked up there when first asked for, so importing the package (or another of its modules)
    never loads ``target``."""

    def __getattr__(name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        module = importlib.import_module(target)
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
