"""Issue 10 item 4: errors a person can act on, one line each, exit 1, no retry that cannot help."""

from __future__ import annotations

import asyncio
import socket

from click.testing import CliRunner
from judge_helpers import cards_of, fast_config, scored_db

import evalkit.cli


def invoke(*args):
    return CliRunner().invoke(evalkit.cli.cli, list(args), catch_exceptions=False)


def judge_at(server, tmp_path, model: str, *options: str):
    """`evalkit judge` of two scored runs with ``model`` on the fake server, one request at a time."""
    db = scored_db(tmp_path, 2)
    config = fast_config(tmp_path)
    args = ["--db", db, "--model", model, "--api-base", server.api_base, "--concurrency", "1", "--judge-config", config]
    return invoke("judge", *args, *options)


def error_lines(res) -> list[str]:
    return [line for line in res.stderr.splitlines() if line.startswith("error:")]


def free_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_no_api_key_names_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    db = scored_db(tmp_path, 1)
    res = invoke("judge", "--db", db, "--model", "anthropic/claude-3-5-sonnet-20240620")
    assert res.exit_code == 1
    lines = error_lines(res)
    assert len(lines) == 1 and "set ANTHROPIC_API_KEY in the environment" in lines[0]
    assert "no API key for anthropic/claude-3-5-sonnet-20240620" in lines[0]


def test_request_shape_refused_names_parameter_and_the_mode_to_try(tmp_path, server):
    server.dialect = "llamacpp"
    res = judge_at(server, tmp_path, "openai/smollm2", "--output-mode", "json_schema")
    assert res.exit_code == 1 and server.count == 1  # refused once: no retry, no further call
    lines = error_lines(res)
    assert len(lines) == 1
    assert f"{server.api_base} refused response_format.type in json_schema mode" in lines[0]
    assert "Input should be 'text' or 'json_object'" in lines[0]
    assert "try --output-mode json_object_schema" in lines[0]


def test_unknown_model_lists_the_models_the_server_offers(tmp_path, server):
    server.models = ["smollm2-135m-instruct", "qwen2.5-0.5b"]
    res = judge_at(server, tmp_path, "openai/smollm")
    assert res.exit_code == 1 and server.count == 1
    lines = error_lines(res)
    assert lines == [
        f"error: {server.api_base} has no model 'smollm'; it offers: qwen2.5-0.5b, "
        "smollm2-135m-instruct (use --model openai/<id>)"
    ]


def test_connection_refused_says_nothing_listening(tmp_path):
    db = scored_db(tmp_path, 1)
    base = f"http://127.0.0.1:{free_port()}/v1"
    res = invoke("judge", "--db", db, "--model", "openai/smollm2", "--api-base", base)
    assert res.exit_code == 1
    assert error_lines(res) == [
        f"error: nothing listening at {base} (connection refused): start the server or fix --api-base"
    ]


def test_connection_refused_mid_run_is_not_retried(tmp_path):
    """After the preflight (the server went away): one request, then the same one-line message."""
    from evalkit.judges.litellm_judge import LiteLLMJudge
    from evalkit.judges.protocol import JudgeFatalError
    from evalkit.judges.rubrics import load_rubric

    db = scored_db(tmp_path, 1)
    base = f"http://127.0.0.1:{free_port()}/v1"
    judge = LiteLLMJudge("openai/smollm2", api_base=base, config=None)
    bundle = cards_of(db)[0].judge_bundle
    bundle = bundle.model_dump(mode="json") if hasattr(bundle, "model_dump") else bundle
    try:
        asyncio.run(judge.annotate(bundle, load_rubric("procedure_v1")))
    except JudgeFatalError as exc:
        assert str(exc).startswith(f"nothing listening at {base}")
        assert exc.annotation.attempts == 1 and exc.annotation.retries == 0
    else:
        raise AssertionError("a refused connection must stop the run")


def test_missing_key_at_call_time_names_the_environment_variable(monkeypatch):
    """A client that refuses to send for want of a key (past the preflight, e.g. the key unset
    meanwhile) gets the same hint: the variable litellm reads for the provider."""
    from evalkit.judges.litellm_judge import LiteLLMJudge

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    judge = LiteLLMJudge("anthropic/claude-3-5-sonnet-20240620")
    message = judge._fatal_message(RuntimeError("Missing credentials: set an API key"))
    assert message.startswith("anthropic/claude-3-5-sonnet-20240620: RuntimeError: Missing credentials")
    assert message.endswith("— not retried; set ANTHROPIC_API_KEY")
