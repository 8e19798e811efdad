"""A running job whose process has gone quiet for too long: "not responding".

A job's process speaks as it works: events (progress, steps,
validations) and log lines. One that stops for much longer than it usually
takes between two of them is probably stuck (a deadlock, a hung device, a
network file system that stopped answering), yet still "running" and
holding its device. The worker's supervising loop tells each time it hears
the process; the watchdog says when the silence has lasted ``SILENCE_FACTOR``
times the median gap between the recent times it was heard, and never
sooner than ``JOB_SILENT_SECONDS`` (a start that loads a large dataset says
nothing for minutes). The job page then says so and offers to kill the
process and run the job again, resuming from its last snapshot.
"""

from __future__ import annotations

import statistics
from collections import deque

SILENCE_FACTOR = 10
GAPS_KEPT = 100  # the median is over this many of the most recent gaps


class Watchdog:
    def __init__(self, minimum_seconds: float, now: float) -> None:
        self.minimum_seconds = minimum_seconds
        self.last_heard = now
        self.gaps: deque[float] = deque(maxlen=GAPS_KEPT)

    def heard(self, now: float) -> None:
        self.gaps.append(now - self.last_heard)
        self.last_heard = now

    def limit(self) -> float:
        """Seconds of silence after which the process counts as not responding."""
        usual = statistics.median(self.gaps) if self.gaps else 0.0
        return max(self.minimum_seconds, SILENCE_FACTOR * usual)

    def silent(self, now: float) -> bool:
        return now - self.last_heard > self.limit()
