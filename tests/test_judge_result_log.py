"""The judge's result log holds a run's results on disk, not in memory: reading it back streams,
and nothing that merely names it (a repr, which asyncio takes of the finished main task when
asyncio.run restores its SIGINT handler) reads its entries."""

from __future__ import annotations

import asyncio
import signal

from evalkit.judges.runner import ResultLog


def _log(n: int) -> ResultLog:
    log = ResultLog()
    for i in range(n):
        log[i] = {"run_id": f"run-{n - i:04d}", "judge_model": "m", "replicate": None, "text": "x" * 100}
    return log


def test_a_repr_of_the_log_reads_no_entry(monkeypatch):
    log = _log(600)

    def no_reads(*_a, **_k):
        raise AssertionError("the repr read the entries")

    monkeypatch.setattr(log, "_docs", no_reads)
    assert repr(log) == "<ResultLog: 600 results>"


def test_asyncio_run_returning_a_log_reads_no_entry(monkeypatch):
    """The path that held every result in memory at the end of `evalkit judge`: asyncio.run formats
    the finished main task (its result included) when it puts back the SIGINT handler."""
    log = _log(50)
    reads = []
    original = ResultLog._docs
    monkeypatch.setattr(ResultLog, "_docs", lambda self, *a: reads.append(a) or original(self, *a))

    async def main():
        return log

    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert asyncio.run(main()) is log
    assert reads == []


def test_the_log_still_reads_back_in_order_and_in_output_order():
    log = _log(5)
    assert [d["run_id"] for d in log] == ["run-0005", "run-0004", "run-0003", "run-0002", "run-0001"]
    assert [d["run_id"] for d in log.in_output_order()] == ["run-0001", "run-0002", "run-0003", "run-0004", "run-0005"]
    assert len(log) == 5 and log[-1]["run_id"] == "run-0001"
