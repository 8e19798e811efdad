"""What a run reports about its hardware: peak FLOP/s per GPU model (for MFU)
and readings that never fail the job; and the pictures of its first layer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from trainer import gpus
from trainer.telemetry import FILTER_PIXELS, Hardware, filters_image, gradients, layer_statistics, peak_for


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


def test_a_steps_gradients_outlive_zero_grad_for_the_layer_report_after_the_interval():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 3))
    model(torch.randn(5, 1, 8, 8)).square().sum().backward()
    at_the_step = layer_statistics(model)
    held = gradients(model)
    torch.optim.SGD(model.parameters(), lr=0.0).zero_grad(set_to_none=True)
    assert all(parameter.grad is None for parameter in model.parameters())
    assert [layer["name"] for layer in at_the_step] == ["0", "2"]
    assert all(layer["grad_norm"] > 0 and sum(layer["grad_hist"]["counts"]) == size
               for layer, size in zip(at_the_step, (36, 432), strict=True))
    assert layer_statistics(model, held) == at_the_step
    assert [layer["grad_norm"] for layer in layer_statistics(model)] == [None, None]
