"""How many CPU threads a job's processes compute with: the share of the
machine's cores that its CPU slots lease, not torch's default of every
core. With ``CPU_SLOTS`` jobs on one machine, each taking every core, the
threads fight over the cores; small networks (a detector's heads, LeNet)
were measured several times slower so on a 2-core machine than with a
thread a core between them.

An administrator who sets ``OMP_NUM_THREADS`` for the worker keeps it: the
job inherits it unchanged. GPU jobs are left as they are (torchrun gives
each of several processes one thread)."""

from __future__ import annotations

import os
from collections.abc import Mapping

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def machine_cores() -> int:
    """The cores this process may run on (its affinity, as a container's CPU set limits it)."""
    return len(os.sched_getaffinity(0))


def thread_environment(devices: list[str], cpu_slots: int, cores: int, environ: Mapping[str, str]) -> dict[str, str]:
    """The thread variables for a job leasing ``devices`` on a machine of
    ``cores`` cores shared by ``cpu_slots`` CPU slots; none for a job
    without CPU slots or when the worker's ``environ`` sets its own."""
    leased = sum(1 for device in devices if device.startswith("cpu"))
    if not leased or "OMP_NUM_THREADS" in environ:
        return {}
    threads = str(max(1, cores * leased // max(cpu_slots, 1)))
    return dict.fromkeys(THREAD_VARIABLES, threads)
