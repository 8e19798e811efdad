"""How busy the machine a worker runs on is: CPU use since the previous
reading, memory in use, and disk free where the app keeps its files. Read
from ``/proc`` and the file system, so no library is needed; where ``/proc``
is missing (not Linux) the CPU and memory readings are None."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

_previous_cpu: tuple[int, int] | None = None  # (busy, total) clock ticks at the previous reading


def _cpu_ticks() -> tuple[int, int] | None:
    try:
        first_line = Path("/proc/stat").read_text().split("\n", 1)[0]
    except OSError:
        return None
    # user nice system idle iowait irq softirq steal; guest time is already in user.
    ticks = [int(v) for v in first_line.split()[1:9]]
    idle = ticks[3] + ticks[4]
    return sum(ticks) - idle, sum(ticks)


def cpu_utilization() -> float | None:
    """Percent of all cores busy since the previous call; None on the first."""
    global _previous_cpu
    now = _cpu_ticks()
    before, _previous_cpu = _previous_cpu, now
    if now is None or before is None or now[1] <= before[1]:
        return None
    return 100.0 * (now[0] - before[0]) / (now[1] - before[1])


def memory() -> tuple[int, int] | None:
    """(bytes in use, bytes in all): in use is what is not available to new processes."""
    try:
        lines = Path("/proc/meminfo").read_text().splitlines()
    except OSError:
        return None
    kib = {line.split(":")[0]: int(line.split()[1]) for line in lines if line.endswith(" kB")}
    if "MemTotal" not in kib or "MemAvailable" not in kib:
        return None
    return (kib["MemTotal"] - kib["MemAvailable"]) * 1024, kib["MemTotal"] * 1024


def cpu_readings() -> dict[str, Any]:
    """The machine's CPU and memory use, in the keys the GPUs' readings use."""
    used, total = memory() or (None, None)
    return {"utilization": cpu_utilization(), "memory_used": used, "memory_total": total}


def disk(folder: Path) -> dict[str, int]:
    """Bytes free and in all on the file system that holds ``folder``."""
    usage = shutil.disk_usage(folder)
    return {"free": usage.free, "total": usage.total}
