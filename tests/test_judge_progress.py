"""The judge's progress line: rate, elapsed time and ETA, with tokens and cost so far."""

from __future__ import annotations

import io

from evalkit.judges.runner import Progress, Summary, clock_text


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_line_has_rate_elapsed_eta_tokens_and_cost():
    clock, out = Clock(), io.StringIO()
    bar = Progress(10, enabled=True, stream=out, clock=clock)
    summary = Summary(prompt_tokens=1200, completion_tokens=300, cost_usd=0.0125)
    for _ in range(4):
        clock.now += 0.5
        bar.update(summary)
    line = out.getvalue().split("\r")[-1]
    assert "4/10" in line and "tokens 1500" in line and "$0.0125" in line
    assert "2.0 calls/s" in line and "elapsed 0:02" in line and "ETA 0:03" in line


def test_cache_hits_are_not_part_of_the_rate():
    clock, out = Clock(), io.StringIO()
    bar = Progress(4, enabled=True, stream=out, clock=clock)
    summary = Summary(cache_hits=2)
    bar.update(summary)
    bar.update(summary)  # two instant cache hits: no rate yet
    assert "- calls/s" in out.getvalue().split("\r")[-1] and "ETA ?" in out.getvalue().split("\r")[-1]
    clock.now += 1.0
    bar.update(summary)
    assert "1.0 calls/s" in out.getvalue().split("\r")[-1] and "ETA 0:01" in out.getvalue().split("\r")[-1]


def test_progress_is_silent_in_pipes_and_clock_text_reads_hours():
    out = io.StringIO()
    Progress(3, stream=out).update(Summary())  # not a terminal, not forced
    assert out.getvalue() == ""
    assert clock_text(59) == "0:59" and clock_text(3725) == "1:02:05"
