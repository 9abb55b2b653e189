"""The audit's disagreement list is cut to the listed ones before the report's JSON copy of the
audit: the report holds what cutting that copy gives, and counts every run's disagreements alike."""

from __future__ import annotations

import datetime
import json
from collections import Counter

import pytest

import evalkit.agreement.audit as audit_module
from evalkit.report import data


def _reference(audit: dict) -> tuple[dict, Counter]:
    """The whole audit through JSON, then cut."""
    copy = json.loads(json.dumps(audit, sort_keys=True, default=str))
    items = copy.get("disagreements") or []
    counts = Counter(d.get("run_id") for d in items)
    if len(items) > data.TOP_DISAGREEMENTS:
        copy["disagreements"] = items[: data.TOP_DISAGREEMENTS]
        copy["disagreements_left_out"] = (
            len(items) - data.TOP_DISAGREEMENTS + int(copy.get("disagreements_left_out") or 0)
        )
    return {"available": True, "audit": copy}, counts


def _audit(n: int, left_out) -> dict:
    ids = ["run-a", "run-b", 7, 7.0, datetime.date(2026, 1, 2), None, "2026-01-02", "run-<c>"]
    return {
        "warnings": ["w"],
        "counts": {"disagreements": n + 3, "b": 1, "a": 2},
        "disagreements": [
            {"z": i, "run_id": ids[i % len(ids)], "why": ("tuple", i), "at": datetime.date(2026, 1, 1 + i % 28)}
            for i in range(n)
        ],
        "disagreements_left_out": left_out,
        "pairings": [{"n": 3, "kappa": float("nan")}],
    }


@pytest.mark.parametrize("n", [0, 1, data.TOP_DISAGREEMENTS, data.TOP_DISAGREEMENTS + 1, 500])
@pytest.mark.parametrize("left_out", [0, 3, None])
def test_cut_before_the_copy_is_the_copy_cut(monkeypatch, n, left_out):
    monkeypatch.setattr(audit_module, "build_audit", lambda *_a, **_k: _audit(n, left_out))
    got = data._agreement_section("unused.db", True, False, None)
    want = _reference(_audit(n, left_out))
    assert json.dumps(got[0], sort_keys=True) == json.dumps(want[0], sort_keys=True)
    assert got[1] == want[1]
    assert list(got[0]["audit"]) == list(want[0]["audit"])
