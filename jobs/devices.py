"""What devices this machine offers: GPUs read through NVML when the driver
is there, otherwise ``CPU_SLOTS`` CPU slots."""

from __future__ import annotations

import logging
from typing import Any

from trainer import gpus as nvml

from . import hostload

log = logging.getLogger(__name__)


# A GPU in MIG mode is listed but not leased: CUDA then sees its slices, not
# the board, and a job given the board's index would find no device.
MIG_KIND = "gpu-mig"
MIG_REFUSED = ("GPU {index} ({name}) is split into MIG slices, which digitslike does not lease; "
               "turn MIG off to use it (nvidia-smi -i {index} -mig 0).")


def _gpu(index: int) -> dict[str, Any]:
    reading = nvml.reading(index)
    if nvml.mig_enabled(index):
        note = MIG_REFUSED.format(index=index, name=reading["name"])
        log.warning(note)
        return {"id": f"gpu{index}", "kind": MIG_KIND, "note": note, **reading}
    return {"id": f"gpu{index}", "kind": "gpu", **reading}


def gpus() -> list[dict[str, Any]]:
    if not nvml.nvml_ready():
        return []
    try:
        return [_gpu(i) for i in range(nvml.count())]
    except nvml.pynvml.NVMLError as exc:
        log.warning("NVML could not read the GPUs: %s", exc)
        return []


def cpu_slots(count: int) -> list[dict[str, Any]]:
    """The slots share the machine's CPUs and memory: each shows the machine's use."""
    readings = hostload.cpu_readings()
    return [{"id": f"cpu{i}", "kind": "cpu", "index": i, "name": f"CPU slot {i}", **readings} for i in range(count)]


def inventory(cpu_slot_count: int) -> list[dict[str, Any]]:
    """Every device a job on this machine can lease: the GPUs and the CPU slots."""
    return gpus() + cpu_slots(cpu_slot_count)
