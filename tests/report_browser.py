"""A minimal headless-Chromium driver for the report tests: the DevTools protocol over a pipe.

``--remote-debugging-pipe`` makes Chromium read protocol messages on fd 3 and write them on fd 4,
NUL-separated JSON. That needs nothing beyond the standard library (no selenium, no chromedriver,
no websocket client, no open port), and gives what a screenshot-only run cannot: console
messages, uncaught exceptions, security (CSP) errors, every network request and JS dialogs.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--hide-scrollbars",
    "--window-size=1280,900",
]


def playwright_chromium():
    """Debian's chromium launched through Playwright's API (a generator for a pytest fixture: yields
    the browser, closes it after). Without chromium or playwright the test skips, saying why; with
    EVALKIT_REQUIRE_BROWSER=1 (CI) it fails instead."""
    import pytest

    def missing(why: str):
        if os.environ.get("EVALKIT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"EVALKIT_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)

    path = find_chromium()
    if path is None:
        missing("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed (pip install 'evalkit[test]')")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=path, headless=True, args=[f for f in CHROMIUM_FLAGS if f != "--headless"]
        )
        yield browser
        browser.close()


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@dataclass
class PageResult:
    events: list[dict] = field(default_factory=list)
    values: dict = field(default_factory=dict)
    screenshot: bytes = b""
    stderr: str = ""

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (CSP, failed loads)."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:300])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"log/{p['entry'].get('source')}: {p['entry'].get('text')}")
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def dialogs(self) -> list[str]:
        return [
            e["params"].get("message", "") for e in self.events if e.get("method") == "Page.javascriptDialogOpening"
        ]


class Browser:
    def __init__(self, chromium: str, timeout: float = 30.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="evalkit-chromium-")
        self.err = open(Path(self.profile) / "stderr.log", "w+b")  # a file, so a chatty browser never blocks
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_fds():  # runs in the child before exec: protocol on fds 3 and 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4),
            preexec_fn=wire_fds,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.err,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []

    # -- protocol ------------------------------------------------------------------------------
    def _read(self, until, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "method" in msg:
                    self.events.append(msg)
                if until(msg):
                    return msg
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"chromium did not answer in {timeout:.0f}s; stderr: {self.stderr()[-800:]}")
            ready, _, _ = select.select([self._from_browser], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium exited (code {self.proc.poll()}); stderr: {self.stderr()[-800:]}")
                self._buf += chunk

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        wanted = self._id
        reply = self._read(lambda m: m.get("id") == wanted, self.timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def stderr(self) -> str:
        self.err.flush()
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")

    # -- one page ------------------------------------------------------------------------------
    def load(self, url: str, expressions: dict[str, str], screenshot: bool = True) -> PageResult:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        start = len(self.events)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=session)
        self.call("Page.navigate", {"url": url}, session)
        self._read(lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == session, self.timeout)
        result = PageResult()
        for name, expr in expressions.items():
            value = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session)
            if "exceptionDetails" in value:
                raise RuntimeError(f"{name}: {value['exceptionDetails']}")
            result.values[name] = value["result"].get("value")
        if screenshot:
            shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session)
            result.screenshot = base64.b64decode(shot["data"])
        result.events = [e for e in self.events[start:] if e.get("sessionId") in (session, None)]
        self.call("Target.closeTarget", {"targetId": target})
        return result

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self.err.close()
        shutil.rmtree(self.profile, ignore_errors=True)
