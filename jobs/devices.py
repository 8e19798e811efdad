"""What devices this machine offers: GPUs read through NVML when the driver
is there, otherwise ``CPU_SLOTS`` CPU slots."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

try:
    import pynvml
except ImportError:  # nvidia-ml-py is in requirements; this guards odd installs
    pynvml = None


def _nvml_ready() -> bool:
    if pynvml is None:
        return False
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    return True


def _gpu(index: int) -> dict[str, Any]:
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
    info: dict[str, Any] = {
        "id": f"gpu{index}",
        "kind": "gpu",
        "index": index,
        "name": pynvml.nvmlDeviceGetName(handle),
        "memory_used": int(memory.used),
        "memory_total": int(memory.total),
    }
    readings = {
        "utilization": lambda: pynvml.nvmlDeviceGetUtilizationRates(handle).gpu,
        "temperature": lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
        "power_watts": lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
    }
    for name, read in readings.items():
        try:
            info[name] = read()
        except pynvml.NVMLError:  # not every board reports every sensor
            info[name] = None
    return info


def gpus() -> list[dict[str, Any]]:
    if not _nvml_ready():
        return []
    try:
        return [_gpu(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except pynvml.NVMLError as exc:
        log.warning("NVML could not read the GPUs: %s", exc)
        return []


def cpu_slots(count: int) -> list[dict[str, Any]]:
    return [{"id": f"cpu{i}", "kind": "cpu", "index": i, "name": f"CPU slot {i}"} for i in range(count)]


def inventory(cpu_slot_count: int) -> list[dict[str, Any]]:
    """Every device a job on this machine can lease: the GPUs and the CPU slots."""
    return gpus() + cpu_slots(cpu_slot_count)
