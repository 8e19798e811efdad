"""Readings of NVIDIA GPUs through NVML, for the worker's device list and
the trainer's hardware panel. Imports neither torch nor Django."""

from __future__ import annotations

from typing import Any

# CUDA numbers GPUs fastest first unless told otherwise; NVML (and so the
# worker's device list, the leases' gpuN and nvidia-smi) in PCI bus order.
# Every process that uses CUDA for a job runs with this.
CUDA_NUMBERING = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}

try:
    import pynvml
except ImportError:  # nvidia-ml-py is in requirements; this guards odd installs
    pynvml = None


def nvml_ready() -> bool:
    """Whether NVML answers (a driver is there)."""
    if pynvml is None:
        return False
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    return True


def count() -> int:
    return pynvml.nvmlDeviceGetCount()


def mig_enabled(index: int) -> bool:
    """Whether GPU ``index`` is split into MIG slices (False where the board has no MIG)."""
    try:
        current, _pending = pynvml.nvmlDeviceGetMigMode(pynvml.nvmlDeviceGetHandleByIndex(index))
    except pynvml.NVMLError:  # NotSupported: a board without MIG
        return False
    return current == pynvml.NVML_DEVICE_MIG_ENABLE


def safe_reading(index: int) -> dict[str, Any]:
    """``reading(index)``, or the index and NVML's error when it fails (a
    board fallen off the bus, a driver reloaded): a reading is never worth a job."""
    try:
        return reading(index)
    except pynvml.NVMLError as exc:
        return {"index": index, "error": str(exc)}


def reading(index: int) -> dict[str, Any]:
    """Name, memory, utilisation, temperature and power of GPU ``index``;
    a sensor the board does not report reads None."""
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
    info: dict[str, Any] = {"index": index, "name": pynvml.nvmlDeviceGetName(handle),
                            "memory_used": int(memory.used), "memory_total": int(memory.total)}
    sensors = {
        "utilization": lambda: pynvml.nvmlDeviceGetUtilizationRates(handle).gpu,
        "temperature": lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
        "power_watts": lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
    }
    for name, read in sensors.items():
        try:
            info[name] = read()
        except pynvml.NVMLError:
            info[name] = None
    return info
