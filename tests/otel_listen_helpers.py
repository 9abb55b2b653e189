"""`evalkit import otel --listen` as its user starts it: the real command in a subprocess, spoken to
over real sockets, stopped with SIGINT (Ctrl-C)."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Listener:
    """``evalkit import otel --listen HOST:0 -o DIR ARGS``; ``url`` is the address it printed."""

    def __init__(self, out: Path, *args: str, host: str = "127.0.0.1"):
        self.out = out
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evalkit", "import", "otel", "--listen", f"{host}:0", "-o", str(out), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        first = self.proc.stdout.readline()
        found = re.search(r"http://(\S+?):(\d+)/v1/traces", first)
        if not found:
            self.proc.kill()
            raise AssertionError(f"no address printed: {first!r} {self.proc.stderr.read()}")
        self.port = int(found.group(2))
        self.url = f"http://127.0.0.1:{self.port}/v1/traces"  # a 0.0.0.0 bind is reached here too
        self.banner = [first]
        self.token = None
        if "--token" in args or host not in ("127.0.0.1", "localhost", "127.0.0.2"):
            self.banner.append(self.proc.stdout.readline())
            self.token = re.search(r"access token: (\S+)", self.banner[1]).group(1)

    def stop(self, timeout: float = 30, signum: int = signal.SIGINT) -> tuple[int, str, str]:
        """SIGINT, as Ctrl-C sends it (or ``signum``); (exit code, rest of stdout, stderr)."""
        self.proc.send_signal(signum)
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()

    def status(self, field: str) -> int:
        """A number from /proc/PID/status (Threads, VmHWM in kB, ...)."""
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(rf"^{field}:\s+(\d+)", text, re.M).group(1))

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        import os

        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def runs(self) -> dict[str, list[dict]]:
        return {
            p.name: [json.loads(line) for line in p.read_text().splitlines()] for p in sorted(self.out.glob("*.jsonl"))
        }


def raw_request(
    port: int, head: bytes, body: bytes = b"", timeout: float = 30, host: str = "127.0.0.1"
) -> tuple[int, dict, bytes]:
    """Send ``head`` (request line and headers, without the blank line) and ``body`` on a raw socket;
    the status, the headers (lower-case names) and the body of the answer."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(head.rstrip(b"\r\n") + b"\r\n\r\n")
        try:
            sock.sendall(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered early and stopped reading: the answer is still there
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    head_text, _, rest = data.partition(b"\r\n\r\n")
    lines = head_text.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, rest


def post(port: int, body: bytes, *headers: str, path: str = "/v1/traces") -> tuple[int, dict, bytes]:
    """A well-formed POST with Content-Length."""
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}", *headers]
    if not any(h.lower().startswith("content-type") for h in headers):
        head.append("Content-Type: application/json")
    return raw_request(port, "\r\n".join(head).encode(), body)


def wait_for(predicate, timeout: float = 10, step: float = 0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()
