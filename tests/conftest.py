"""Fixtures shared by several test modules (pytest finds them here; nothing imports them by name).

Plain helper functions live in the ``*_helpers.py`` / ``*_fixtures.py`` modules next to this file
and are imported normally.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from fake_llm_server import FakeLLMServer
from judge_helpers import FAKE_KEY

# Bytecode caches written even where PYTHONDONTWRITEBYTECODE is set: without them every `evalkit`
# process a test starts compiles the package from source again (0.1-0.3 s each, hundreds of them),
# and pytest rewrites every test module's asserts again on each run.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# examples/inspect/tiny_task.py writes real inspect_ai logs for the inspect importer's tests
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "inspect"))


@pytest.fixture(scope="session")
def _server():
    """One fake OpenAI-compatible server on 127.0.0.1 for the whole session."""
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def server(_server, monkeypatch):
    """The session's fake server, reset before and after the test, with a fake API key set."""
    _server.reset()
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    yield _server
    _server.reset()


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory):
    """One .eval and one .json log of examples/inspect/tiny_task.py, written by inspect_ai itself,
    once per session: {"eval": path, "json": path}."""
    import tiny_task

    return tiny_task.write_logs(tmp_path_factory.mktemp("inspect-logs"))


# Modules whose tests start servers, browsers, worker pools or subprocesses (3 s or more of test time
# each, measured with --junitxml on this 2-core machine): marked `slow`, so `pytest -m "not slow"` is
# the edit loop's fast subset. CI runs everything.
SLOW_MODULES = frozenset(
    {
        "test_aggregate_streaming",
        "test_audit_odd_values",
        "test_db_open_live",
        "test_db_open_readonly_wal",
        "test_db_readonly",
        "test_docs_commands",
        "test_docs_match_code",
        "test_engine_ray",
        "test_engines",
        "test_export_otel",
        "test_hostile_file_names",
        "test_import_inspect",
        "test_import_otel_dialects",
        "test_import_otel_hostile",
        "test_import_otel_listen",
        "test_import_otel_listen_cli",
        "test_import_workers",
        "test_judge_batch",
        "test_judge_batch_anthropic",
        "test_judge_dialects",
        "test_judge_grammar",
        "test_judge_hostile_transport",
        "test_judge_llm",
        "test_judge_pairwise",
        "test_judge_rate_limit",
        "test_judge_resume",
        "test_otel_receiver_hostile",
        "test_outputs_streams",
        "test_packaging",
        "test_probe_cli",
        "test_processes_pool",
        "test_report_cli",
        "test_report_html",
        "test_report_scale",
        "test_rule_comparators",
        "test_scale_arrow",
        "test_scale_identical",
        "test_scale_ray",
        "test_scale_spool",
        "test_scale_started_pool",
        "test_score_junit",
        "test_score_path_imports",
        "test_score_scenario_warnings",
        "test_stale_annotations",
        "test_view_blind_browser",
        "test_view_browser",
        "test_view_checklist_truth",
        "test_view_hostile_input",
        "test_view_index",
        "test_view_queue_browser",
        "test_view_reviews",
        "test_view_served",
    }
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
