"""The public surface is pinned: evalkit and evalkit.api export exactly these names."""

from __future__ import annotations

from loaded_modules import loaded_after

from evalkit import api

COMMANDS = (
    "score aggregate judge audit report import_runs probe compare plan verdicts check schema annotations_list "
    "annotations_import cache_stats cache_clear review_export export_parquet export_otel view_server"
).split()
ERRORS = "DbError JudgeNotStored OutputError ReportError RubricError SchemaError UnknownJudgeError".split()
# the building blocks and types, written as one set: adding or removing a name fails the test
BLOCKS = set(
    """
    Aggregator DEFAULT_DB InputError PROBE_NAMES RunSummary ScoreCard ScoreJob Scored Store aggregate_db audit_with_pairs
    check_probes check_resample derive_scalar expand_paths gate_failure import_formats import_options
    importer_for iter_scorecards judge_batches judge_dry_run judge_paths load_scenarios otel_problem
    output_modes parquet_problem parse_trajectory pass_hat_k read_trajectory score_file score_inputs score_into
    score_run score_stream score_to_db score_trajectory verdict_files verdict_order workers_started worse_failure
    """.split()
)


def test_api_exports_one_function_per_command_then_the_blocks():
    assert api.COMMANDS == COMMANDS
    assert api.ERRORS == ERRORS
    assert api.__all__[: len(COMMANDS) + len(ERRORS)] == COMMANDS + ERRORS
    rest = api.__all__[len(COMMANDS) + len(ERRORS) :]
    assert len(rest) == len(BLOCKS) and set(rest) == BLOCKS


def test_every_exported_name_exists():
    for name in api.__all__:
        assert getattr(api, name) is not None, name


def test_the_error_types_are_the_layers_own_and_load_when_asked_for():
    from evalkit.db import DbError
    from evalkit.errors import EvalkitError, InputError

    assert api.DbError is DbError
    for name in ERRORS:
        error = getattr(api, name)
        assert issubclass(error, (EvalkitError, ValueError)), name
    assert issubclass(api.RubricError, InputError)
    try:
        api.NoSuchName  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchName" in str(exc)
    else:
        raise AssertionError("an unknown name must be an AttributeError")


def test_importing_the_api_leaves_the_judge_layer_unloaded():
    assert loaded_after("import evalkit.api", "evalkit.judges", "litellm", "numpy", "scipy") == []


def test_import_evalkit_is_light():
    assert loaded_after("import evalkit", "litellm", "numpy", "scipy", "pydantic", "evalkit.api") == []


def test_score_through_the_package_face(tmp_path):
    from pathlib import Path

    examples = Path(__file__).resolve().parent.parent / "examples"
    cards, errors = api.score([str(examples / "a320")], db=tmp_path / "e.db")
    assert cards and not errors
    again, _ = api.score([str(examples / "a320")])
    assert [c.model_dump_json() for c in again] == [c.model_dump_json() for c in cards]
    assert api.aggregate(cards)["models"]


def test_the_command_checks_are_value_errors_naming_the_problem(tmp_path):
    """What a command says as a usage error, the api says as a ValueError of the same line."""
    import pytest

    with pytest.raises(ValueError, match=f"no such file or directory: {tmp_path / 'nope'}"):
        api.score_inputs([str(tmp_path / "nope")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"no trajectory files \(\*\.jsonl\) found in: "):
        api.score_inputs([str(tmp_path / "empty")])
    with pytest.raises(ValueError, match="--ray-address needs --engine ray"):
        api.score_inputs(["-"], ray_address="x")
    with pytest.raises(ValueError, match="--dialect is not used by format taubench"):
        api.importer_for("taubench", options={"dialect": "x"})
    with pytest.raises(ValueError, match="nope"):
        api.check_probes(["nope"])
    assert api.check_probes(["identity", "false_claim"]) == ["false_claim", "identity"]  # the documented order


def test_the_gates_live_in_one_place_and_the_api_reaches_them():
    result = {"models": [{"model": "m", "score_mean": 0.5, "pass_rate": 0.5, "n": 2}]}
    assert api.gate_failure(result) is None
    assert "m" in api.gate_failure(result, fail_under=0.9)
