"""The model server's lease on its GPU, taken like a job's (``trainer.devicelease``)
so that a job and the server never load models onto one GPU together.

The server takes the lease before it loads a model onto the GPU, keeps it
alive while it holds models, and gives it back after ``idle_seconds``
without a request, once it has dropped its models. A job holding the GPU
makes the server refuse (``DeviceBusy``) rather than wait: the request's
client gets a clear answer at once, and the job keeps the GPU to itself.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

import redis

from trainer import devicelease

# How the server's holder of a lease begins (then its pid), where jobs hold theirs by id.
HOLDER_PREFIX = "modelserver:"


class DeviceBusy(Exception):
    """Another holder (a job) has the GPU; ``str(exc)`` says so for the user."""


def device_id(torch_device: str) -> str | None:
    """The lease's device for a torch device: ``gpuN`` for ``cuda`` or
    ``cuda:N``, None for the CPU (which takes no lease)."""
    found = re.fullmatch(r"cuda(?::(\d+))?", torch_device.strip())
    return f"gpu{found.group(1) or 0}" if found else None


class GpuLease:
    def __init__(self, client: redis.Redis, prefix: str, host: str, device: str, ttl_seconds: float,
                 idle_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.client, self.prefix, self.host, self.device = client, prefix, host, device
        self.ttl_seconds, self.idle_seconds, self.clock = ttl_seconds, idle_seconds, clock
        self.holder = f"{HOLDER_PREFIX}{os.getpid()}"
        self.held = False
        self.used_at = self.refreshed_at = 0.0

    @property
    def _ttl_ms(self) -> int:
        return int(self.ttl_seconds * 1000)

    def take(self) -> None:
        """Hold the GPU for a request, or raise DeviceBusy."""
        if not self.held:
            taken = devicelease.acquire(self.client, self.prefix, self.host, [self.device], 1, self.holder,
                                        self._ttl_ms)
            if taken is None:
                raise DeviceBusy(f"The GPU ({self.device}) is busy with a job; try again when it ends.")
            self.held, self.refreshed_at = True, self.clock()
        self.used_at = self.clock()

    def keep(self) -> bool:
        """Refresh the lease when a third of its time to live has passed;
        whether it is still held (False: it was not, or a job has it now)."""
        if not self.held:
            return False
        if self.clock() - self.refreshed_at >= self.ttl_seconds / 3:
            if devicelease.refresh(self.client, self.prefix, self.host, [self.device], self.holder, self._ttl_ms):
                self.held = False
                return False
            self.refreshed_at = self.clock()
        return True

    def idle(self) -> bool:
        """Held, and unused for ``idle_seconds``: time to give it back."""
        return self.held and self.clock() - self.used_at >= self.idle_seconds

    def release(self) -> None:
        devicelease.release(self.client, self.prefix, self.host, [self.device], self.holder)
        self.held = False
