"""What a run reports about its hardware: peak FLOP/s per GPU model (for MFU)
and readings that never fail the job."""

from __future__ import annotations

import pytest

from trainer import gpus
from trainer.telemetry import Hardware, peak_for


@pytest.mark.parametrize(("name", "precision", "peak"), [
    ("NVIDIA H100 80GB HBM3", "bf16", 989e12),   # SXM5
    ("NVIDIA H100 PCIe", "bf16", 756e12),
    ("NVIDIA H100 NVL", "bf16", 835.5e12),
    ("NVIDIA H100 80GB HBM3", "fp32", 67e12),
    ("NVIDIA H100 PCIe", "fp32", 51e12),
    ("NVIDIA H200", "bf16", 989e12),
    ("NVIDIA H200 NVL", "bf16", 835.5e12),
    ("NVIDIA A100-SXM4-80GB", "bf16", 312e12),
    ("NVIDIA A100 80GB PCIe", "tf32", 156e12),
    ("NVIDIA A10G", "bf16", 70e12),
    ("NVIDIA A10", "bf16", 125e12),
    ("NVIDIA L40S", "bf16", 362e12),
    ("NVIDIA L40", "bf16", 181e12),
    ("NVIDIA L4", "bf16", 121e12),
])
def test_each_gpu_variant_has_its_own_peak(name, precision, peak):
    assert peak_for(name, precision) == peak


def test_a_gpu_not_in_the_table_has_no_peak_and_so_no_mfu():
    assert peak_for("NVIDIA GeForce GTX 1080", "fp32") is None


def test_a_gpu_nvml_cannot_read_is_reported_not_raised():
    reading = gpus.safe_reading(999)  # no such board; without a driver NVML is not even started
    assert reading["index"] == 999 and reading["error"]
    hardware = Hardware([999]).read()
    assert hardware["rss_bytes"] > 0
    assert all("error" in gpu for gpu in hardware["gpus"])
