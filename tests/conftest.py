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
