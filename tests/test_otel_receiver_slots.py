"""The receiver's connection slots are given back exactly once per request, even when Ctrl-C
arrives while a request's thread is starting: a second release would raise in the main thread in
place of the interrupt, and the receiver would go on serving after Ctrl-C."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("opentelemetry.proto")

from evalkit.importers.formats import otel  # noqa: E402
from evalkit.importers.formats.otel_receiver import MAX_CONNECTIONS, Receiver  # noqa: E402


def test_ctrl_c_while_a_request_thread_starts_gives_its_slot_back_once_and_stays_an_interrupt(tmp_path, monkeypatch):
    receiver = Receiver("127.0.0.1:0", str(tmp_path), otel.Options())
    server = receiver._httpd
    try:
        finished = threading.Event()

        def start_then_interrupt(self):
            # the thread runs (and gives its slot back) before the main thread's start() returns
            threading.Thread.run(self)
            finished.set()
            raise KeyboardInterrupt

        monkeypatch.setattr(threading.Thread, "start", start_then_interrupt)
        monkeypatch.setattr(server, "finish_request", lambda request, address: None)
        monkeypatch.setattr(server, "shutdown_request", lambda request: None)
        request = object()
        with pytest.raises(KeyboardInterrupt):
            server.process_request(request, ("127.0.0.1", 1))
        assert finished.is_set()
        monkeypatch.undo()
        # every slot is free, none twice: MAX_CONNECTIONS acquires succeed and one more does not
        got = [server.slots.acquire(blocking=False) for _ in range(MAX_CONNECTIONS + 1)]
        assert got.count(True) == MAX_CONNECTIONS
    finally:
        server.server_close()
