"""A judge reply that echoes the API key: no copy of the key is stored or printed anywhere.

Redaction happens once, where the reply enters evalkit, so the stored annotation, its rationale,
the cached raw reply and an annotation served from that cache are one and the same redacted text.
Everything goes through the real litellm client to tests/fake_llm_server.py on 127.0.0.1.
"""

from __future__ import annotations

import json
from pathlib import Path

from judge_helpers import FAKE_KEY, invoke, judge_cli, request_config, rows, scored_db


def judge(tmp_path, server, db, *extra):
    return judge_cli(db, server.api_base, request_config(tmp_path, 5.0, 2), *extra)


def echoed_db(tmp_path, server) -> str:
    server.default = "echo_key"
    db = scored_db(tmp_path, 2)
    res = judge(tmp_path, server, db)
    assert res.exit_code == 0, res.output
    assert FAKE_KEY in json.dumps(server.requests[0]["headers"])  # the key did go out, and came back
    return db


def test_echoed_key_is_in_no_byte_of_the_database(tmp_path, server):
    db = echoed_db(tmp_path, server)
    for suffix in ("", "-wal", "-shm"):
        path = Path(db + suffix)
        if path.exists():
            assert FAKE_KEY.encode() not in path.read_bytes(), f"key found in {path.name}"
    tables = [t for (t,) in rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        for row in rows(db, f"SELECT * FROM {table}"):
            assert FAKE_KEY not in json.dumps(row, default=str), f"key found in table {table}"
    rationales = [r for (r,) in rows(db, "SELECT rationale FROM annotations")]
    assert rationales and all("[REDACTED]" in r for r in rationales)


def test_echoed_key_is_not_printed_by_judge_audit_or_report(tmp_path, server):
    server.default = "echo_key"
    db = scored_db(tmp_path, 2)
    out = judge(tmp_path, server, db).output
    audit = invoke("audit", "--db", db, "--resamples", 0)
    audit_json = invoke("audit", "--db", db, "--resamples", 0, "--format", "json")
    html, markdown = tmp_path / "r.html", tmp_path / "r.md"
    report = invoke("report", "--db", db, "--html", html, "--markdown", markdown)
    assert report.exit_code == 0, report.output
    for name, text in (
        ("judge", out),
        ("audit", audit.output),
        ("audit json", audit_json.output),
        ("html", html.read_text()),
        ("markdown", markdown.read_text()),
    ):
        assert FAKE_KEY not in text, f"key printed by {name}"
    assert "[REDACTED]" in html.read_text()


def test_cached_rerun_gives_the_identical_annotation(tmp_path, server):
    db = echoed_db(tmp_path, server)
    first = rows(db, "SELECT run_id, annotation, rationale FROM annotations ORDER BY run_id")
    calls = server.count
    res = judge(tmp_path, server, db, "--rubric", "procedure_v1")
    assert res.exit_code == 0 and server.count == calls  # every answer came from the cache
    # served from the cache: the annotation rows are rewritten from the stored (redacted) reply
    assert rows(db, "SELECT run_id, annotation, rationale FROM annotations ORDER BY run_id") == first
    raw = rows(db, "SELECT raw_response FROM judge_calls ORDER BY run_id")
    assert [json.loads(r)["rationale"] for (r,) in raw] == [f[2] for f in first]


def test_a_key_in_the_transcript_is_not_stored_in_the_request(tmp_path, server):
    """The request (the prompt, quoting the run) is stored too: a key the agent printed is redacted."""
    from judge_helpers import write_runs

    from evalkit.db import Store
    from evalkit.engines.pipeline import score_files

    runs = write_runs(tmp_path / "runs", 1)
    path = next(runs.glob("*.jsonl"))
    path.write_text(path.read_text().replace("reading the ECAM first.", f"reading the ECAM first. {FAKE_KEY}"))
    db = str(tmp_path / "k.db")
    store = Store(db)
    for card in score_files([runs]):
        store.save(card)
    store.close()
    res = judge(tmp_path, server, db)
    assert res.exit_code == 0, res.output
    assert FAKE_KEY in json.dumps(server.requests[0]["body"])  # the judge was shown the run as it is
    (request,) = rows(db, "SELECT request FROM judge_calls")[0]
    assert FAKE_KEY not in request and "[REDACTED]" in request


def test_redact_value_reads_the_environment_once_and_sees_a_key_set_later(monkeypatch):
    from evalkit.judges import redaction

    monkeypatch.setenv("LATE_API_KEY", "sk-late-0123456789")
    scans = []
    real = redaction.secret_values
    monkeypatch.setattr(redaction, "secret_values", lambda: scans.append(1) or real())
    request = {
        "messages": [{"content": f"echo sk-late-0123456789 #{i}"} for i in range(50)],
        "sk-late-0123456789": ["Bearer abcdefghijkl"],
    }
    out = redaction.redact_value(request)
    assert "sk-late-0123456789" not in json.dumps(out)
    assert out["[REDACTED]"] == ["Bearer [REDACTED]"]
    assert out["messages"][7]["content"] == "echo [REDACTED] #7"
    assert len(scans) == 1
