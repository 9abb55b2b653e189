"""A judge run against a rate-limited provider (the fake server's rate-limit mode: 429 past 3
requests in progress) settles near the limit: fewer than 10 % of requests answered 429 once
settled, every run judged, through the real litellm client."""

from __future__ import annotations

import json

import pytest
from judge_helpers import FAST, cards_of, scored_db

from evalkit.judges.api import judge_cards

pytestmark = pytest.mark.slow


def test_adaptive_concurrency_avoids_a_429_storm(tmp_path, server):
    db = scored_db(tmp_path, 80)
    server.capacity, server.latency, server.retry_after = 3, 0.05, 0.05
    cfg = json.loads(json.dumps(FAST))
    cfg["retry"]["attempts"] = 12
    res = judge_cards(cards_of(db), ["openai/judge-a"], db=db, api_base=server.api_base, config=cfg, concurrency=12)
    assert res.ok and res.summary.ok == 80
    answers = [r["behaviour"] for r in server.requests]
    settled = answers[len(answers) // 5 :]
    assert settled.count("429") / len(settled) < 0.10, answers
    assert res.summary.rate_limited == server.rate_limited == answers.count("429") > 0
    assert res.summary.concurrency_lowest is not None and res.summary.concurrency_lowest <= 3
