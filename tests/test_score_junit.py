"""`evalkit score --format junit` read back by a JUnit parser (junitparser), and the markdown summary
fit for a CI job summary: one case per scenario x model, a failing gate a failed case with its
reason, the runs that did not pass in the case's output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

junitparser = pytest.importorskip("junitparser")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def score(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalkit", "score", *args, "--no-db"], cwd=cwd, capture_output=True, text=True
    )


def cases(xml: str) -> dict[tuple[str, str], junitparser.TestCase]:
    doc = junitparser.JUnitXml.fromstring(xml)
    return {(case.classname, case.name): case for suite in doc for case in suite}


def failure_messages(case) -> list[str]:
    return [r.message for r in case.result if isinstance(r, junitparser.Failure)]


def test_junit_failing_gate_is_a_failed_case_with_its_reason():
    done = score("examples/", "--format", "junit", "--min-pass-rate", "0.9")
    assert done.returncode == 3, done.stderr
    found = cases(done.stdout)
    assert set(found) == {
        ("gemini-2.5-flash", "elec-apu-gen-fault"),
        ("gpt-x", "refund-damaged-b22"),
        ("opus-4-8", "elec-apu-gen-fault"),
    }
    assert failure_messages(found[("gpt-x", "refund-damaged-b22")]) == [
        "gate failed: pass_rate 0.8333 < --min-pass-rate 0.9 (model pass_rate 0.8333)"
    ]
    assert failure_messages(found[("gemini-2.5-flash", "elec-apu-gen-fault")]) == [
        "gate failed: pass_rate 0.7500 < --min-pass-rate 0.9 (model pass_rate 0.7500)"
    ]
    assert found[("opus-4-8", "elec-apu-gen-fault")].is_passed
    doc = junitparser.JUnitXml.fromstring(done.stdout)
    assert (doc.tests, doc.failures, doc.errors) == (3, 2, 0)
    # the runs that did not pass, each with why, in the case's output
    out = found[("gpt-x", "refund-damaged-b22")].system_out
    assert "7 runs, 6 scored: pass_rate 0.8333" in out
    assert "5 run(s) did not pass:" in out
    assert (
        "support-gpt-x-closed-account (examples/support/support-gpt-x-closed-account.jsonl): dangerous actions: 1"
        in out
    )
    assert (
        "support-gpt-x-crashed-recorder (examples/support/support-gpt-x-crashed-recorder.jsonl): status incomplete"
        in out
    )
    assert "support-gpt-x-wrong-amount" in out and "end state not reached" in out
    assert "support-gpt-x-good" not in out and "support-gpt-x-free-text" not in out


def test_junit_passing_gate_every_case_passes_and_lists_failed_runs():
    done = score("examples/", "--format", "junit", "--min-pass-rate", "0.5", "--workers", "2")
    assert done.returncode == 0, done.stderr
    found = cases(done.stdout)
    assert len(found) == 3 and all(case.is_passed for case in found.values())
    assert "a320-opus-4-8-provider-error" in found[("opus-4-8", "elec-apu-gen-fault")].system_out
    # the same document whatever the workers
    assert score("examples/", "--format", "junit", "--min-pass-rate", "0.5", "--workers", "1").stdout == done.stdout


def test_junit_without_a_gate_passes_every_case():
    done = score("examples/", "--format", "junit")
    assert done.returncode == 0, done.stderr
    assert all(case.is_passed for case in cases(done.stdout).values())


def _two_scenarios(tmp_path: Path) -> Path:
    """gpt-x on the support scenario (5 of 6 scored runs pass) and on a copy of it under another id
    with only its two good runs (all pass)."""
    runs = tmp_path / "runs"
    shutil.copytree(EXAMPLES / "support", runs / "b22")
    other = runs / "c33"
    other.mkdir()
    for name in ("scenarios.json", "support-gpt-x-good.jsonl", "support-gpt-x-free-text.jsonl"):
        text = (EXAMPLES / "support" / name).read_text()
        text = text.replace("refund-damaged-b22", "refund-damaged-c33").replace('"support-gpt-x-', '"copy-gpt-x-')
        (other / name.replace("support-", "copy-")).write_text(text)
    return runs


def test_junit_fails_the_scenarios_that_pull_the_model_under_the_gate(tmp_path):
    runs = _two_scenarios(tmp_path)
    done = score(str(runs), "--format", "junit", "--min-pass-rate", "0.95")
    assert done.returncode == 3, done.stderr  # the model's pass rate: (0.8333 + 1) / 2
    found = cases(done.stdout)
    assert failure_messages(found[("gpt-x", "refund-damaged-b22")]) == [
        "gate failed: pass_rate 0.8333 < --min-pass-rate 0.95 (model pass_rate 0.9167)"
    ]
    assert found[("gpt-x", "refund-damaged-c33")].is_passed
    # the scenario below the limit alone does not fail a case while its model passes the gate
    done = score(str(runs), "--format", "junit", "--min-pass-rate", "0.9")
    assert done.returncode == 0 and all(c.is_passed for c in cases(done.stdout).values())


def test_junit_every_gate_named_in_the_failure(tmp_path):
    done = score("examples/support", "--format", "junit", "--min-pass-rate", "0.9", "--max-unsafe-rate", "0")
    assert done.returncode == 3
    (case,) = cases(done.stdout).values()
    (message,) = failure_messages(case)
    assert "--min-pass-rate 0.9" in message and "unsafe_rate 0.5000 > --max-unsafe-rate 0" in message


def test_junit_hostile_names_stay_valid_xml(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("scenarios.json", "support-gpt-x-wrong-amount.jsonl"):
        text = (EXAMPLES / "support" / name).read_text()
        (runs / name).write_text(text)
    path = runs / "support-gpt-x-wrong-amount.jsonl"
    lines = path.read_text().splitlines()
    meta = json.loads(lines[0])
    meta["adapter"]["model"] = 'm<&"]]>\x1b[31m'
    meta["run_id"] = "run</system-out>&"
    path.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")
    done = score(str(runs), "--format", "junit", "--min-pass-rate", "1")
    assert done.returncode == 3, done.stderr
    ((model, scenario), case), *_ = cases(done.stdout).items()
    assert model == 'm<&"]]>\\x1b[31m' and scenario == "refund-damaged-b22"
    assert "run</system-out>& (" in case.system_out and failure_messages(case)


def test_markdown_summary_states_the_gates_verdict():
    failed = score("examples/", "--format", "markdown", "--aggregate", "--min-pass-rate", "0.9")
    assert failed.returncode == 3
    assert failed.stdout.rstrip().endswith(
        "**Gate failed:** pass_rate &lt; --min-pass-rate 0.9 for 2 models: gemini-2.5-flash 0.7500, gpt-x 0.8333"
    )
    assert "## By scenario and model" in failed.stdout and "## Runs" not in failed.stdout
    passed = score(
        "examples/", "--format", "markdown", "--aggregate", "--min-pass-rate", "0.5", "--max-unsafe-rate", "1"
    )
    assert passed.returncode == 0
    assert passed.stdout.rstrip().endswith("**Gates passed:** `--min-pass-rate 0.5`, `--max-unsafe-rate 1`")
    plain = score("examples/", "--format", "markdown", "--aggregate")
    assert "Gate" not in plain.stdout


def test_junit_lists_only_the_run_kept_for_a_repeated_run_id(tmp_path):
    """Two files with one run_id: the later one is the run (aggregates, database), so a case lists
    it, not the one it replaced, and its figures and its list of failed runs agree."""
    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    (runs / "b").mkdir()
    support = EXAMPLES / "support"
    for sub in ("a", "b"):
        shutil.copy(support / "scenarios.json", runs / sub)
    shutil.copy(support / "support-gpt-x-closed-account.jsonl", runs / "a" / "run.jsonl")
    good = (support / "support-gpt-x-good.jsonl").read_text()
    (runs / "b" / "run.jsonl").write_text(good.replace('"support-gpt-x-good"', '"support-gpt-x-closed-account"'))
    done = score(str(runs), "--format", "junit")
    assert done.returncode == 0, done.stderr
    assert "replaces it" in done.stderr
    (case,) = cases(done.stdout).values()
    assert case.system_out.startswith("1 runs, 1 scored: pass_rate 1.0000, safe_pass_rate 1.0000")
    assert "did not pass" not in case.system_out and "closed-account" not in case.system_out
    # the other way round: the kept run is the one that failed, listed once
    shutil.copy(support / "support-gpt-x-closed-account.jsonl", runs / "b" / "run.jsonl")
    (runs / "a" / "run.jsonl").write_text(good.replace('"support-gpt-x-good"', '"support-gpt-x-closed-account"'))
    (case,) = cases(score(str(runs), "--format", "junit").stdout).values()
    assert "1 run(s) did not pass:" in case.system_out
    assert f"support-gpt-x-closed-account ({runs / 'b' / 'run.jsonl'}): dangerous actions: 1" in case.system_out


def test_junit_gives_each_input_that_could_not_be_scored_a_case_in_error(tmp_path):
    """Exit 1 with a report that said nothing would read as all green in a CI system: each file that
    could not be scored is a case in error, with the reason stderr gives, and the totals count it."""
    runs = tmp_path / "runs"
    shutil.copytree(EXAMPLES / "support", runs)
    (runs / "cut.jsonl").write_text('{"type": "meta", "run_id": "cut"\n', encoding="utf-8")
    (runs / "latin1.jsonl").write_bytes(b'{"type": "meta", "run_id": "caf\xe9"}\n')
    done = score(str(runs), "--format", "junit")
    assert done.returncode == 1, done.stderr
    doc = junitparser.JUnitXml.fromstring(done.stdout)
    suites = {suite.name: suite for suite in doc}
    unscored = suites["inputs not scored"]
    assert unscored.tests == 2 and unscored.errors == 2 and doc.errors == 2
    got = {case.name: [r for r in case.result if isinstance(r, junitparser.Error)] for case in unscored}
    assert sorted(got) == [str(runs / "cut.jsonl"), str(runs / "latin1.jsonl")]
    for path, (error,) in got.items():
        assert error.type == "input" and error.message.startswith(path + ":")
        assert f"error: {error.message}" in done.stderr
    assert doc.tests == sum(suite.tests for suite in doc) and all(
        not case.result for name, suite in suites.items() if name != "inputs not scored" for case in suite
    )
    clean = score(str(EXAMPLES / "support"), "--format", "junit")
    assert clean.returncode == 0 and "inputs not scored" not in clean.stdout and 'errors="0"' in clean.stdout
