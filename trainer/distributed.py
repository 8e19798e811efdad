"""Where this training process runs: its rank among the job's processes and
its device. ``torchrun`` sets RANK, WORLD_SIZE and LOCAL_RANK; a plain
``python -m trainer.train`` is rank 0 of 1. The worker restricts
CUDA_VISIBLE_DEVICES to the job's leased GPUs, so local rank N uses the Nth
of them. GPUs are numbered in PCI bus order, as NVML (and so the worker's
device list and ``nvidia-smi``) numbers them; CUDA's own default order puts
the fastest board first, which would make ``gpu1`` of the page another board
than CUDA's device 1.

A job that leased GPUs and cannot use them (no driver, a driver too old for
this PyTorch's CUDA, a GPU this build has no kernels for, fewer visible GPUs
than processes) fails with ``DeviceError`` saying which, never trains on the
CPU instead.

A training process ends with ``exit_process``, not a normal interpreter
exit: see its docstring."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import NoReturn

import torch
import torch.distributed as dist

from .gpus import CUDA_NUMBERING

# The oldest Linux driver each CUDA major version runs on (NVIDIA's CUDA
# toolkit release notes, "minor version compatibility").
MINIMUM_DRIVER = {"12": "525.60.13", "13": "580.65.06"}
GPU_PREFIX = "gpu"  # a leased GPU's id is gpuN, N its NVML index


class DeviceError(Exception):
    """The job's leased GPUs cannot be used by this process; the message says why."""


@dataclass(frozen=True)
class Placement:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    local_world_size: int = 1  # processes of this job on this machine

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def all_reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.distributed:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    def average_(self, tensors: list[torch.Tensor]) -> None:
        """Replace each tensor by its mean over the processes, in place (one collective)."""
        if not self.distributed or not tensors:
            return
        flat = torch.cat([t.detach().reshape(-1).double() for t in tensors])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat /= self.world_size
        for tensor, mean in zip(tensors, flat.split([t.numel() for t in tensors]), strict=True):
            tensor.copy_(mean.view_as(tensor))

    def synchronize(self) -> None:
        """Wait for this process's queued GPU work (a host-device sync; nothing on the CPU)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def gather(self, value: object) -> list[object]:
        if not self.distributed:
            return [value]
        values: list[object] = [None] * self.world_size
        dist.all_gather_object(values, value)
        return values

    def close(self) -> None:
        if self.distributed and dist.is_initialized():
            dist.destroy_process_group()


def setup(devices: list[str]) -> Placement:
    """This process's place in a job that leased ``devices`` (the config's list)."""
    rank = int(os.environ.get("RANK", "0"))
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_world_size = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    device = device_for(devices, local_rank)
    if world_size > 1:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                device_id=device if device.type == "cuda" else None)
    return Placement(rank, world_size, local_rank, device, local_world_size)


def device_for(devices: list[str], local_rank: int) -> torch.device:
    """The device of local rank ``local_rank`` in a job that leased
    ``devices``: its GPU when GPUs were leased (or it must fail), the CPU for
    CPU slots, and for a run by hand that names none, a GPU when there is one."""
    gpus = [d for d in devices if d.startswith(GPU_PREFIX)]
    if devices and not gpus:
        return torch.device("cpu")
    os.environ.update(CUDA_NUMBERING)  # read when CUDA starts, which is below
    if not gpus and not torch.cuda.is_available():
        return torch.device("cpu")
    problem = cuda_problem(local_rank)
    if problem:
        raise DeviceError(f"The job leased {', '.join(gpus) or 'a GPU'} but cannot use it: {problem} "
                          f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')!r}). "
                          f"{requirement()}")
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    return device


def requirement() -> str:
    """What this PyTorch build needs of the machine, in words."""
    cuda = torch.version.cuda or "none"
    driver = MINIMUM_DRIVER.get(cuda.split(".")[0])
    needs = f"an NVIDIA driver {driver} or newer" if driver else "an NVIDIA driver for it"
    arches = ", ".join(a for a in torch.cuda.get_arch_list() if a.startswith("sm_"))
    return f"PyTorch {torch.__version__} is built for CUDA {cuda}: it needs {needs} and a GPU of {arches or 'no'} architecture."


def cuda_problem(local_rank: int) -> str | None:
    """Why CUDA device ``local_rank`` is unusable here, or None when it is usable."""
    if torch.version.cuda is None:
        return "this PyTorch is built without CUDA"
    try:
        torch.cuda.init()
    except RuntimeError as exc:  # no driver, a driver too old, no device visible
        return f"CUDA does not start ({str(exc).strip()})"
    count = torch.cuda.device_count()
    if local_rank >= count:
        return f"process {local_rank} of this machine finds {count} visible GPU(s)"
    capability = torch.cuda.get_device_capability(local_rank)
    if not runs_on(capability, torch.cuda.get_arch_list()):
        return (f"{torch.cuda.get_device_name(local_rank)} has compute capability {capability[0]}.{capability[1]}, "
                "which this build has no kernels for")
    return None


def runs_on(capability: tuple[int, int], arch_list: list[str]) -> bool:
    """Whether a build for ``arch_list`` (``sm_80``, ``compute_90``…) runs on a
    GPU of ``capability``: a binary for sm_XY runs on X.Z with Z >= Y; PTX
    (compute_XY) is compiled for any GPU of X.Y or newer."""
    major, minor = capability
    for arch in arch_list:
        kind, _, number = arch.partition("_")
        number = number.rstrip("abcdefghijklmnopqrstuvwxyz")  # sm_90a: 9.0's own features
        built = (int(number[:-1]), int(number[-1]))
        if (kind == "sm" and built[0] == major and built[1] <= minor) or (kind == "compute" and built <= capability):
            return True
    return False


def exit_process(code: int) -> NoReturn:
    """End the process now, without Python's finalization.

    PyTorch's C++ threads (gloo's and NCCL's communication workers, the
    autograd and intra-op pools) can still be finishing work when ``main``
    returns, and may take the GIL to release a tensor's Python object. During
    finalization Python 3.11 ends such a thread with ``pthread_exit``, whose
    unwinding through a ``noexcept`` C++ frame calls ``std::terminate``:
    "terminate called without an active exception", SIGABRT, and ``torchrun``
    reports a run that trained to the end as failed. Everything the run must
    leave (events, checkpoints, the export) is written and closed before this
    is called; only the standard streams need flushing.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
