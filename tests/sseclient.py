"""A Server-Sent Events client on a thread, for tests against the real web
server: it collects parsed events and, like a browser, reconnects with
``Last-Event-ID`` when the connection drops."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

import httpx


class SSEClient:
    def __init__(self, url: str, headers: dict[str, str] | None = None, last_event_id: str | None = None,
                 reconnect: bool = True) -> None:
        self.url, self.headers, self.reconnect = url, dict(headers or {}), reconnect
        self.last_event_id = last_event_id
        self.events: list[dict] = []
        self.connections = 0
        self.connected = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            headers = dict(self.headers)
            if self.last_event_id:
                headers["Last-Event-ID"] = self.last_event_id
            try:
                with httpx.stream("GET", self.url, headers=headers, timeout=httpx.Timeout(5, read=30)) as response:
                    response.raise_for_status()
                    self._response = response
                    self.connections += 1
                    self.connected.set()
                    self._read(response)
            except (httpx.HTTPError, httpx.StreamError, RuntimeError, AttributeError, OSError):
                pass
            if not self.reconnect:
                return
            time.sleep(0.3)

    def _read(self, response: httpx.Response) -> None:
        fields: dict[str, str] = {}
        for line in response.iter_lines():
            if self._stop.is_set():
                return
            if line == "":
                if "data" in fields:
                    event = {"event": fields.get("event", "message"), "id": fields.get("id"),
                             "data": json.loads(fields["data"]), "received": time.monotonic()}
                    if event["id"]:
                        self.last_event_id = event["id"]
                    with self._lock:
                        self.events.append(event)
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")

    def of(self, event: str = "message") -> list[dict]:
        with self._lock:
            return [e for e in self.events if e["event"] == event]

    def close(self) -> None:
        """Hang up at once, as a browser closing the page does. The reader
        thread waits in the socket's read (until the next keep-alive, 15 s
        away), so the socket is shut down under it: the server sees the end
        of the connection now, not whenever the reader next wakes."""
        self._stop.set()
        if self._response is not None:
            network = self._response.extensions.get("network_stream")
            connection = network.get_extra_info("socket") if network is not None else None
            if connection is not None:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
            # Closing from another thread may race the reader; the thread is a daemon.
            with contextlib.suppress(Exception):
                self._response.close()
        self._thread.join(2)
