"""The agreement modules are named for what they hold; the old names keep working (with a
DeprecationWarning, tests/test_moved_modules.py) and the audit's two entry points say how they differ."""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RENAMED = {
    "evalkit.agreement.paired": "evalkit.agreement.judge_vs_mechanical",
    "evalkit.agreement.pairings": "evalkit.agreement.pairings_config",
    "evalkit.agreement.compare": "evalkit.agreement.label_comparison",
    "evalkit.agreement.render": "evalkit.agreement.audit_output",
    "evalkit.agreement.stats.encoding": "evalkit.agreement.stats.stat",
}


def test_old_agreement_paths_are_the_renamed_modules():
    for old, new in RENAMED.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert importlib.import_module(old) is importlib.import_module(new), old
        assert not (ROOT / (old.replace(".", "/") + ".py")).exists()


def test_documented_names_import_from_the_old_paths():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from evalkit.agreement.compare import compare
        from evalkit.agreement.pairings import load_audit_config
        from evalkit.agreement.render import audit_json
        from evalkit.agreement.stats.encoding import Stat
    from evalkit.agreement.audit_output import audit_json as new_json
    from evalkit.agreement.label_comparison import compare as new_compare
    from evalkit.agreement.pairings_config import load_audit_config as new_load

    assert (compare, load_audit_config, audit_json) == (new_compare, new_load, new_json) and Stat


def test_the_audit_output_module_is_not_a_second_render_py():
    agreement = [p.name for p in (ROOT / "evalkit" / "agreement").rglob("*.py")]
    assert "render.py" not in agreement and "audit_output.py" in agreement


def test_the_audit_entry_points_say_what_they_return():
    from evalkit.agreement import audit

    assert audit.run_audit is audit.build_audit_with_pairs  # the older name
    assert audit.build_audit.__doc__.startswith("The audit dict alone")
