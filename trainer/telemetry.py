"""What a training run reports about itself besides its metrics: hardware
readings, per-layer weight and gradient statistics with an image of the first
layer's filters, throughput and model FLOP utilisation, and short profiles.

Everything here runs at reporting points (every few seconds, or at a
validation), never inside the step."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from . import gpus as nvml
from . import jobfiles

HISTOGRAM_BINS = 30
MAX_LAYERS = 64
FILTER_PIXELS = 8  # each weight of a filter becomes an 8×8 block in the image
PROFILE_STEPS = 5
PROFILE_TOP = 15

# Dense peak FLOP/s (without sparsity) per GPU for the precision used, from
# the vendors' data sheets; MFU is reported only for GPUs listed here. Each
# entry is a part of the name NVML and CUDA report; the first that the name
# holds wins, so a variant comes before its family's plain name: "NVIDIA H100
# 80GB HBM3" (SXM5), "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA A10G",
# "NVIDIA A10", "NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe" (the same peaks).
PEAK_FLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H100 PCIe", {"bf16": 756e12, "fp16": 756e12, "tf32": 378e12, "fp32": 51e12}),
    ("H100 NVL", {"bf16": 835.5e12, "fp16": 835.5e12, "tf32": 417.5e12, "fp32": 60e12}),
    ("H200 NVL", {"bf16": 835.5e12, "fp16": 835.5e12, "tf32": 417.5e12, "fp32": 60e12}),
    ("H100", {"bf16": 989e12, "fp16": 989e12, "tf32": 494e12, "fp32": 67e12}),
    ("H200", {"bf16": 989e12, "fp16": 989e12, "tf32": 494e12, "fp32": 67e12}),  # GH200's too
    ("A100", {"bf16": 312e12, "fp16": 312e12, "tf32": 156e12, "fp32": 19.5e12}),
    ("A10G", {"bf16": 70e12, "fp16": 70e12, "tf32": 35e12, "fp32": 35e12}),  # AWS's variant: fewer tensor FLOPs
    ("A10", {"bf16": 125e12, "fp16": 125e12, "tf32": 62.5e12, "fp32": 31.2e12}),
    ("L40S", {"bf16": 362e12, "fp16": 362e12, "tf32": 183e12, "fp32": 91.6e12}),
    ("L40", {"bf16": 181e12, "fp16": 181e12, "tf32": 90.5e12, "fp32": 90.5e12}),
    ("L4", {"bf16": 121e12, "fp16": 121e12, "tf32": 60e12, "fp32": 30.3e12}),
)


def peak_flops(device: torch.device, precision: str) -> float | None:
    if device.type != "cuda":
        return None
    return peak_for(torch.cuda.get_device_name(device), precision)


def peak_for(name: str, precision: str) -> float | None:
    """The dense peak FLOP/s of the GPU called ``name`` at ``precision``, if listed."""
    for model, peaks in PEAK_FLOPS:
        if model in name:
            return peaks.get(precision)
    return None


class Hardware:
    """Readings of the job's GPUs (NVML) and of this process (/proc). A GPU
    NVML cannot read is reported with the error, never failing the job."""

    def __init__(self, gpu_indices: list[int]) -> None:
        self.gpu_indices = gpu_indices
        self.nvml = bool(gpu_indices) and nvml.nvml_ready()
        self.last_cpu = self._cpu_seconds()
        self.last_time = time.monotonic()

    @staticmethod
    def _cpu_seconds() -> float:
        times = os.times()
        return times.user + times.system

    @staticmethod
    def _rss_bytes() -> int:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def read(self) -> dict[str, Any]:
        now, cpu = time.monotonic(), self._cpu_seconds()
        cpu_percent = 100.0 * (cpu - self.last_cpu) / max(now - self.last_time, 1e-6)
        self.last_cpu, self.last_time = cpu, now
        gpus = [nvml.safe_reading(i) for i in self.gpu_indices] if self.nvml else []
        return {"gpus": gpus, "cpu_percent": round(cpu_percent, 1), "rss_bytes": self._rss_bytes(),
                "threads": torch.get_num_threads()}


def _histogram(values: torch.Tensor) -> dict[str, list[float]]:
    values = values.detach().float().flatten()
    low, high = (float(v) for v in torch.aminmax(values))  # host-device sync: reporting point
    if not math.isfinite(low) or not math.isfinite(high):
        return {"edges": [], "counts": []}
    if high <= low:
        high = low + 1e-12
    counts = torch.histc(values, bins=HISTOGRAM_BINS, min=low, max=high)
    edges = np.linspace(low, high, HISTOGRAM_BINS + 1)
    return {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts.tolist()]}


def reported_weights(model: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    """The weight tensors the layer reports cover (biases and norms' scales
    left out), at most ``MAX_LAYERS``."""
    return [(name, parameter) for name, parameter in model.named_parameters() if parameter.ndim >= 2][:MAX_LAYERS]


def gradients(model: torch.nn.Module) -> dict[str, torch.Tensor | None]:
    """The reported weights' gradients of the last step, by name: the tensors
    themselves, no copy, so that ``zero_grad(set_to_none=True)`` leaves them to
    ``layer_statistics`` after the training interval ends."""
    return {name: parameter.grad for name, parameter in reported_weights(model)}


def layer_statistics(model: torch.nn.Module, grads: dict[str, torch.Tensor | None] | None = None) -> list[dict[str, Any]]:
    """Norms and histograms of each reported weight tensor and of its
    gradient: ``grads`` (see ``gradients``), else the parameters' own."""
    layers = []
    for name, parameter in reported_weights(model):
        grad = parameter.grad if grads is None else grads.get(name)
        layers.append({
            "name": name.removesuffix(".weight"),
            "weight_norm": float(parameter.detach().float().norm().item()),
            "grad_norm": float(grad.detach().float().norm().item()) if grad is not None else None,
            "weight_hist": _histogram(parameter),
            "grad_hist": _histogram(grad) if grad is not None else {"edges": [], "counts": []},
        })
    return layers


def first_conv_weight(model: torch.nn.Module) -> torch.Tensor | None:
    for module in model.modules():
        if isinstance(module, torch.nn.Conv2d):
            return module.weight
    return None


def filters_image(weight: torch.Tensor, path: Path, together: bool = False) -> None:
    """The filters of a conv layer as one PNG grid, each filter scaled to its
    own range (its pattern shows, however weak) or all to the layer's range
    (``together``: which filters are strong shows); colour when they read
    three channels."""
    filters = weight.detach().float().cpu()
    if filters.shape[1] != 3:
        filters = filters[:, :1]
    dims = (0, 1, 2, 3) if together else (1, 2, 3)
    low = filters.amin(dim=dims, keepdim=True)
    high = filters.amax(dim=dims, keepdim=True)
    scaled = ((filters - low) / (high - low).clamp_min(1e-12) * 255).round().to(torch.uint8)
    count, channels, kh, kw = scaled.shape
    columns = math.ceil(math.sqrt(count))
    rows = math.ceil(count / columns)
    grid = torch.full((rows * (kh + 1) + 1, columns * (kw + 1) + 1, channels), 255, dtype=torch.uint8)
    for i in range(count):
        r, c = divmod(i, columns)
        grid[1 + r * (kh + 1):1 + r * (kh + 1) + kh, 1 + c * (kw + 1):1 + c * (kw + 1) + kw] = scaled[i].permute(1, 2, 0)
    pixels = grid.numpy().repeat(FILTER_PIXELS, axis=0).repeat(FILTER_PIXELS, axis=1)
    image = Image.fromarray(pixels[:, :, 0] if channels == 1 else pixels)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="PNG")


class Profile:
    """A few steps under the PyTorch profiler, asked for by the web app with
    a ``profile.request`` file in the job folder."""

    REQUEST = jobfiles.PROFILE_REQUEST

    def __init__(self, job_dir: Path, device: torch.device) -> None:
        self.job_dir, self.device = job_dir, device
        self.profiler: torch.profiler.profile | None = None
        self.steps_left = 0
        self.first_step = 0

    def requested(self) -> bool:
        return (self.job_dir / self.REQUEST).exists()

    def start(self, step: int) -> None:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self.profiler = torch.profiler.profile(activities=activities, record_shapes=False)
        self.profiler.__enter__()
        self.steps_left, self.first_step = PROFILE_STEPS, step

    @property
    def active(self) -> bool:
        return self.profiler is not None

    def step_done(self) -> dict[str, Any] | None:
        """Count a profiled step; after the last one, stop and return the report."""
        self.steps_left -= 1
        return self.stop() if self.steps_left <= 0 else None

    def stop(self) -> dict[str, Any]:
        """End the profile (early when training ends first) and report it."""
        steps = PROFILE_STEPS - max(self.steps_left, 0)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # host-device sync: the profile's end
        profiler, self.profiler = self.profiler, None
        profiler.__exit__(None, None, None)
        relative = jobfiles.profile_trace(self.first_step)
        (self.job_dir / jobfiles.PROFILE).mkdir(exist_ok=True)
        profiler.export_chrome_trace(str(self.job_dir / relative))
        (self.job_dir / self.REQUEST).unlink(missing_ok=True)
        return {"file": relative, "steps": steps, "top": _top_operators(profiler)}


def _top_operators(profiler: torch.profiler.profile) -> list[dict[str, Any]]:
    averages = profiler.key_averages()
    device_key = "self_device_time_total"

    def device_us(event: Any) -> float:
        return float(getattr(event, device_key, 0.0) or 0.0)

    ranked = sorted(averages, key=lambda e: (device_us(e), e.self_cpu_time_total), reverse=True)
    return [{"name": e.key, "calls": int(e.count), "self_cpu_ms": e.self_cpu_time_total / 1000.0,
             "self_device_ms": device_us(e) / 1000.0, "total_ms": e.cpu_time_total / 1000.0}
            for e in ranked[:PROFILE_TOP]]
