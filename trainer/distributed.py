"""Where this training process runs: its rank among the job's processes and
its device. ``torchrun`` sets RANK, WORLD_SIZE and LOCAL_RANK; a plain
``python -m trainer.train`` is rank 0 of 1. The worker restricts
CUDA_VISIBLE_DEVICES to the job's leased GPUs, so local rank N uses the Nth
of them.

A training process ends with ``exit_process``, not a normal interpreter
exit: see its docstring."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import NoReturn

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Placement:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device

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

    def any(self, flag: bool) -> bool:
        """True on every rank if ``flag`` is true on any (a host-device sync)."""
        if not self.distributed:
            return flag
        tensor = torch.tensor([1.0 if flag else 0.0], device=self.device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return bool(tensor.item())

    def gather(self, value: object) -> list[object]:
        if not self.distributed:
            return [value]
        values: list[object] = [None] * self.world_size
        dist.all_gather_object(values, value)
        return values

    def close(self) -> None:
        if self.distributed and dist.is_initialized():
            dist.destroy_process_group()


def setup() -> Placement:
    rank = int(os.environ.get("RANK", "0"))
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if world_size > 1:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                device_id=device if device.type == "cuda" else None)
    return Placement(rank, world_size, local_rank, device)


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
