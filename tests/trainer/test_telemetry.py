"""What a run reports about its hardware: peak FLOP/s per GPU model (for MFU)
and readings that never fail the job; and the pictures of its first layer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from trainer import gpus
from trainer.telemetry import FILTER_PIXELS, Hardware, filters_image, peak_for


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


def test_the_first_layers_filters_are_drawn_each_scaled_on_its_own_or_all_together(tmp_path):
    strong = torch.linspace(-1, 1, 9).view(3, 3)
    weight = torch.stack([strong, strong / 100])[:, None]  # two 3×3 filters, one a hundred times weaker

    def filter_pixels(together: bool) -> list[np.ndarray]:
        filters_image(weight, tmp_path / "f.png", together=together)
        pixels = np.asarray(Image.open(tmp_path / "f.png"))[::FILTER_PIXELS, ::FILTER_PIXELS]
        return [pixels[1:4, 1:4], pixels[1:4, 5:8]]  # a white line around each filter

    strong_own, weak_own = filter_pixels(together=False)
    assert strong_own.min() == weak_own.min() == 0 and strong_own.max() == weak_own.max() == 255
    strong_together, weak_together = filter_pixels(together=True)
    assert strong_together.min() == 0 and strong_together.max() == 255
    assert weak_together.min() >= 125 and weak_together.max() <= 130  # close to the middle grey
