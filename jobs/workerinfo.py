"""What a worker process knows about itself: its id, its machine, its
devices. The worker's start (``worker.on_worker_ready``) records it here, and
each task reads it back with ``current()``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from trainer import devicelease

from .devices import MIG_KIND, inventory


@dataclass
class WorkerInfo:
    id: str
    host: str
    devices: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def for_this_process(cls, cpu_slots: int) -> WorkerInfo:
        return cls(id=uuid.uuid4().hex, host=devicelease.host_name(), devices=inventory(cpu_slots))

    def device_ids(self, kind: str) -> list[str]:
        return [d["id"] for d in self.devices if d["kind"] == kind]

    def candidates(self, resources: dict[str, Any]) -> tuple[list[str], int, str]:
        """The devices that may serve a request, how many it needs, and a
        message when this worker can never serve it."""
        kind = resources.get("device", "cpu")
        have = self.device_ids(kind)
        if "ids" in resources:
            wanted = [f"{kind}{i}" for i in resources["ids"]]
            missing = [d for d in wanted if d not in have]
            if missing:
                return [], 0, f"Worker {self.host} has no device {', '.join(missing)}."
            return wanted, len(wanted), ""
        count = int(resources.get("count", 1))
        if count > len(have):
            refused = " ".join(d["note"] for d in self.devices if d["kind"] == MIG_KIND and kind == "gpu")
            return [], 0, (f"The job asks for {count} {kind.upper()} device(s); worker {self.host} has {len(have)}."
                           + (f" {refused}" if refused else ""))
        return have, count, ""


_this_process: WorkerInfo | None = None


def set_current(info: WorkerInfo) -> None:
    global _this_process
    _this_process = info


def recorded() -> WorkerInfo | None:
    """This process's worker, or None before the worker has started."""
    return _this_process


def current() -> WorkerInfo:
    if _this_process is None:
        raise RuntimeError("jobs run only inside a worker started with `manage.py worker`")
    return _this_process
