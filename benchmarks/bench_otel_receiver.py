"""Benchmark the OTLP receiver's cost per request as a trace grows.

    python benchmarks/bench_otel_receiver.py [--spans 2500] [--window 500]

Starts the real `evalkit import otel --listen 127.0.0.1:0` (a subprocess) and sends one trace of
SPANS spans, one span per OTLP JSON request, in the order an SDK exports them: every chat and tool
span of an agent first, its invoke_agent span last. Prints the server process's CPU time (from
/proc) for the first WINDOW requests and for the last WINDOW (the last one completes the run, which
is built and written then), their ratio, and the wall time of the whole sequence. A receiver whose
per-request cost does not grow with the trace has a ratio near 1.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = f"{0xBE7C4:032x}"


def span(index: int, parent: int | None) -> dict:
    if index == 1:
        name, attrs = "invoke_agent bench", {"gen_ai.operation.name": "invoke_agent"}
    elif index % 2:
        name, attrs = "chat m", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "bench/m"}
    else:
        name = "execute_tool lookup"
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.arguments": json.dumps({"q": index}),
        }
    out = {
        "traceId": TRACE,
        "spanId": f"{index:016x}",
        "name": name,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + index * 1000),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + index * 1000 + 500),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }
    if parent is not None:
        out["parentSpanId"] = f"{parent:016x}"
    return out


def body(one: dict) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [one]}]}]}).encode()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(spans: int = 2500, window: int = 500) -> dict[str, float]:
    """CPU seconds of the first and last ``window`` requests of ``spans``, their ratio, and wall time."""
    out = tempfile.mkdtemp(prefix="bench-otel-")
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalkit", "import", "otel", "--listen", "127.0.0.1:0", "-o", out],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        port = int(re.search(r":(\d+)/v1/traces", proc.stdout.readline()).group(1))
        order = [*range(2, spans + 1), 1]  # children first, the agent's own span last
        marks: dict[int, float] = {}
        started = time.perf_counter()
        for n, index in enumerate(order):
            if n in (0, window, spans - window, spans):
                marks[n] = cpu_seconds(proc.pid)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request(
                "POST", "/v1/traces", body(span(index, None if index == 1 else 1)), {"Content-Type": "application/json"}
            )
            response = conn.getresponse()
            assert response.status == 200, response.read()
            response.read()
            conn.close()
        wall = time.perf_counter() - started
        marks[spans] = cpu_seconds(proc.pid)
        assert len(list(Path(out).glob("*.jsonl"))) == 1, "the run was not written"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    first, last = marks[window] - marks[0], marks[spans] - marks[spans - window]
    return {"first": first, "last": last, "ratio": last / first if first else float("inf"), "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=2500)
    parser.add_argument("--window", type=int, default=500)
    args = parser.parse_args()
    m = measure(args.spans, args.window)
    print(f"{args.spans} spans, one per request; server CPU for the first {args.window}: {m['first']:.3f} s, ")
    print(f"for the last {args.window}: {m['last']:.3f} s; ratio last/first {m['ratio']:.2f}; wall {m['wall']:.2f} s")


if __name__ == "__main__":
    main()
