"""The public surface is pinned: evalkit and evalkit.api export exactly these names."""

from __future__ import annotations

import subprocess
import sys

from evalkit import api

COMMANDS = ["score", "aggregate", "judge", "audit", "report", "import_runs", "probe", "compare", "plan", "verdicts"]
TYPES_AND_BLOCKS = sorted(
    [
        "Aggregator",
        "DEFAULT_DB",
        "InputError",
        "RunSummary",
        "ScoreCard",
        "Store",
        "aggregate_db",
        "derive_scalar",
        "expand_paths",
        "iter_scorecards",
        "parse_trajectory",
        "pass_hat_k",
        "judge_paths",
        "read_trajectory",
        "ScoreJob",
        "Scored",
        "score_file",
        "score_into",
        "score_stream",
        "score_to_db",
        "score_trajectory",
    ]
)


def test_api_exports_one_function_per_command_then_the_blocks():
    assert api.COMMANDS == COMMANDS
    assert api.__all__[: len(COMMANDS)] == COMMANDS
    assert sorted(api.__all__[len(COMMANDS) :]) == TYPES_AND_BLOCKS


def test_every_exported_name_exists():
    for name in api.__all__:
        assert getattr(api, name) is not None, name


def test_every_command_function_is_documented():
    for name in COMMANDS:
        fn = getattr(api, name)
        assert callable(fn) and fn.__doc__, name
        if name != "aggregate":  # the building block of the same name, older than the command functions
            assert f"``evalkit {name.split('_')[0]}" in fn.__doc__, name


def test_import_evalkit_is_light():
    code = (
        "import sys, evalkit\n"
        "heavy = [m for m in ('litellm', 'numpy', 'scipy', 'pydantic', 'evalkit.api') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_score_through_the_package_face(tmp_path):
    from pathlib import Path

    examples = Path(__file__).resolve().parent.parent / "examples"
    cards, errors = api.score([str(examples / "a320")], db=tmp_path / "e.db")
    assert cards and not errors
    again, _ = api.score([str(examples / "a320")])
    assert [c.model_dump_json() for c in again] == [c.model_dump_json() for c in cards]
    assert api.aggregate(cards)["models"]
