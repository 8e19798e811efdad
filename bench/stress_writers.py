"""The writers and the CPU hog of ``bench/stream_stress.py``, each run in a
process of its own (``multiprocessing``, spawned).

A writer appends events to every job's ``events.jsonl`` at once with the
others, as the trainer, the worker and the web process do, and puts them on
the bus the way its role does:

- ``publish``: ``jobs.publish.publish``, a fresh ``Forwarder`` per event (the
  web process's way);
- ``late``: its own long-lived ``Forwarder`` per job (the worker's relay),
  which after half of its appends sleeps a random moment before forwarding,
  so that the other writers' forwarders send the same events before it, and
  it sends them again after theirs, out of order on the bus.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class JobRef:
    """What ``publish`` needs of a job (``jobs.publish.JobFolder``)."""

    pk: int
    folder: Path


def hog(until: float) -> None:
    """Busy-loop one core until ``until`` (or until stopped)."""
    while time.time() < until:
        pass


def write(role: str, seed: int, plan: list[JobRef], max_delay: float, ready, go, until: float) -> None:
    """Append one event per entry of ``plan`` (in its order), each forwarded
    as ``role`` does, from ``go`` on (``ready`` says it is set up); stop at
    ``until`` whatever is left."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "digitslike.settings")
    import django

    django.setup()
    from jobs.bus import Forwarder
    from jobs.publish import publish
    from trainer import eventlog

    rng = random.Random(seed)
    forwarders = {job.pk: Forwarder(job.pk, job.folder) for job in {job.pk: job for job in plan}.values()}
    ready.set()
    go.wait(max(0.0, until - time.time()))
    for n, job in enumerate(plan):
        if time.time() > until:
            return
        data = {"writer": seed, "n": n}
        if role == "publish":
            publish(job, "bench", data)
            continue
        eventlog.append(job.folder, "bench", data)
        if rng.random() < 0.5:
            time.sleep(rng.uniform(0, max_delay))
        forwarders[job.pk].forward()
