"""The scenario pages written from the runs build_report kept (evalkit.report.data.ScenarioRuns)
are byte for byte the pages written by reading the runs again from the database."""

from __future__ import annotations

import pytest
import report_fixtures as rf
import report_scale

from evalkit.report import write_html
from evalkit.report.data import PAGE_FIELDS, build_report, iter_scenarios


def _files(directory):
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(
    scope="module",
    params=["examples", "scale"],
)
def db(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(request.param)
    if request.param == "examples":  # every run detailed, hostile ids and titles, judged
        return rf.build_db(tmp)
    return report_scale.build(tmp / "scale.db", 600, scenarios=4, judged=0.5)  # the worst runs detailed


@pytest.mark.slow
def test_kept_runs_are_the_runs_read_again(db):
    from evalkit.db import open_readonly

    report = build_report(db, made_at="2026-01-01T00:00:00Z")
    counts = report["disagreement_counts"]
    with open_readonly(db) as conn:
        again = [
            (sid, [{k: run[k] for k in PAGE_FIELDS} for run, _ in batch]) for sid, batch in iter_scenarios(conn, counts)
        ]
    kept = list(report.scenario_runs)
    assert kept == again
    assert [(sid, [[type(v) for v in r.values()] for r in runs]) for sid, runs in kept] == [
        (sid, [[type(v) for v in r.values()] for r in runs]) for sid, runs in again
    ]


def test_pages_from_kept_runs_equal_pages_read_from_the_database(db, tmp_path):
    report = build_report(db, made_at="2026-01-01T00:00:00Z")
    kept, read = tmp_path / "kept", tmp_path / "read"
    kept.mkdir(), read.mkdir()
    write_html(db, report, kept / "r.html")
    write_html(db, dict(report), read / "r.html")  # a plain dict keeps no runs: they are read again
    assert report.scenario_runs is not None
    assert _files(kept) == _files(read)
    assert len(list((kept / "r-scenarios").iterdir())) == report["counts"]["scenarios"]
