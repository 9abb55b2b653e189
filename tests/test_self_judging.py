"""Self-judging guard: a judge model grading runs of its own agent model is flagged by the audit
(agreement with and without those pairs) and warned about by `evalkit judge` before sending."""

from __future__ import annotations

import pytest
from audit_helpers import Annotator, card, save_cards
from click.testing import CliRunner

import evalkit.cli
from evalkit.agreement.audit import build_audit
from evalkit.agreement.self_judging import model_key, same_model, self_judged_runs, warning_lines


@pytest.mark.parametrize(
    "judge, agent",
    [
        ("openai/gpt-4o", "gpt-4o"),
        ("openrouter/openai/GPT-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "openai/gpt-4o"),
        ("anthropic/claude-3-5-sonnet-20241022", "claude-3-5-sonnet-latest"),
        ("myjudge:gpt-4o", "gpt-4o"),
    ],
)
def test_same_model_after_normalising_provider_prefixes(judge, agent):
    assert same_model(judge, agent)


@pytest.mark.parametrize(
    "judge, agent",
    [
        ("openai/gpt-4o-mini", "gpt-4o"),
        ("ollama/llama3:8b", "llama3:70b"),
        ("openai/gpt-4o", ""),
    ],
)
def test_different_models_are_not_self_judging(judge, agent):
    assert not same_model(judge, agent)


def test_model_key_keeps_ollama_tags():
    assert model_key("ollama/llama3:8b") == "llama3:8b"


def test_warning_counts_runs_per_judge():
    agents = ["gpt-4o", "gpt-4o", "claude", "openai/gpt-4o"]
    assert self_judged_runs(["openai/gpt-4o", "judge-x"], agents) == {"openai/gpt-4o": 3}
    (line,) = warning_lines(["openai/gpt-4o"], agents)
    assert "3 run(s) of its own model" in line and "--allow-self-judging" in line
    assert warning_lines(["judge-x"], agents) == []


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "self.db"
    # judge "openai/agent-x" grades its own model's runs (agreeing) and agent-y's runs (disagreeing)
    save_cards(
        path,
        [card(f"x{i}", model="agent-x", all_passed=True) for i in range(4)]
        + [card(f"y{i}", model="agent-y", all_passed=i < 2) for i in range(4)],
    )
    ann = Annotator(path)
    for i in range(4):
        ann.add(f"x{i}", {"outcome": "pass", "safety": 3, "action_execution": 3}, judge="openai/agent-x")
        ann.add(f"y{i}", {"outcome": "pass", "safety": 3, "action_execution": 3}, judge="openai/agent-x")
    ann.close()
    return path


def test_audit_flags_self_judged_pairs_and_reports_agreement_without_them(db):
    report = build_audit(db, n_resamples=0)
    outcome = next(p for p in report["pairings"] if p["pairing"] == "outcome")
    flagged = outcome["self_judging"]
    assert flagged["pairs"] == 4 and flagged["judges"] == ["openai/agent-x"]
    # with: 6 of 8 agree (its own 4 runs, and 2 of agent-y's); without: 2 of 4
    assert outcome["percent_agreement"]["value"] == pytest.approx(6 / 8)
    assert flagged["without"]["n"] == 4
    assert flagged["without"]["percent_agreement"]["value"] == pytest.approx(2 / 4)
    assert all(d["self_judged"] is False for d in report["disagreements"] if d["model"] == "agent-y")


def test_audit_without_self_judging_has_nothing_to_report(tmp_path):
    path = tmp_path / "clean.db"
    save_cards(path, [card("r1", model="agent-y")])
    ann = Annotator(path)
    ann.add("r1", {"outcome": "pass", "safety": 3, "action_execution": 3}, judge="openai/judge-z")
    ann.close()
    outcome = next(p for p in build_audit(path, n_resamples=0)["pairings"] if p["pairing"] == "outcome")
    assert outcome["self_judging"] == {"pairs": 0, "judges": [], "without": None}


def _judge(db, *extra):
    return CliRunner().invoke(
        evalkit.cli.cli,
        [
            "judge",
            "--db",
            str(db),
            "--model",
            "openai/model-a",
            "--api-base",
            "http://127.0.0.1:9",
            "--dry-run",
            *extra,
        ],
    )


def test_judge_warns_before_sending_and_the_flag_silences_it(tmp_path):
    from judge_helpers import scored_db

    db = scored_db(tmp_path, 2)  # agent model "model-a"
    res = _judge(db)
    assert res.exit_code == 0, res.output
    assert "warning: judge openai/model-a would judge 2 run(s) of its own model" in res.stderr
    silenced = _judge(db, "--allow-self-judging")
    assert silenced.exit_code == 0 and "would judge" not in silenced.stderr
    # the bundle stays blind either way: the dry-run prompt is the same with and without the flag
    assert silenced.stdout == res.stdout
    assert "model-a" not in res.stdout.split("--- system ---", 1)[1]


def test_audit_text_and_report_show_the_self_judged_pairs(db):
    from evalkit.agreement.audit_output import audit_markdown, audit_text
    from evalkit.report import build_report, render_html

    audit = build_audit(db, n_resamples=0)
    line = "outcome: 4 of 8 pairs self-judged (openai/agent-x judging its own model's runs); without them: n 4, agreement 0.50"
    assert line in audit_text(audit)
    assert "openai/agent-x (self)" not in audit_text(audit)  # the disagreements are all agent-y's
    assert "4 of 8 pairs self-judged" in audit_markdown(audit)
    import html

    assert html.escape(line, quote=True) in render_html(build_report(db, made_at="2026-01-01T00:00:00Z"))


def test_disagreements_mark_self_judged_rows(tmp_path):
    from evalkit.agreement.audit_output import audit_text

    path = tmp_path / "own.db"
    save_cards(path, [card("x0", model="agent-x", all_passed=False)])
    ann = Annotator(path)
    ann.add("x0", {"outcome": "pass", "safety": 3, "action_execution": 3}, judge="openai/agent-x")
    ann.close()
    audit = build_audit(path, n_resamples=0)
    assert [d["self_judged"] for d in audit["disagreements"]] == [True]
    assert "openai/agent-x (self)" in audit_text(audit)
