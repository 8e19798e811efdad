"""Work an app has every worker do at each heartbeat (every
``WORKER_HEARTBEAT_SECONDS``), registered in the app's ``ready()``: the
training app's searches are advanced so. ``jobs/`` names none of it. Each
runs in the heartbeat's thread, so it must be short; one that raises is
logged and the others still run."""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

_each_beat: list[Callable[[], None]] = []


def register(work: Callable[[], None]) -> None:
    if work not in _each_beat:
        _each_beat.append(work)


def run_all() -> None:
    for work in _each_beat:
        try:
            work()
        except Exception:  # one app's trouble must not stop the heartbeat or the others' work
            log.exception("periodic work %s failed", getattr(work, "__qualname__", work))
