"""Device leases for jobs: ``<prefix>:lease:<host>:<device>`` holds a job id
(the scripts and key format are ``trainer.devicelease``, shared with
holders that are not jobs, such as an app's server, which the app names for
the resources page with ``resources.register_holder``).

Leases expire unless their worker refreshes them, so devices come back by
themselves when a worker dies. Taking several devices is one Lua script, so a
job gets all it asked for or nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from trainer import devicelease

from .bus import client


def ttl_ms() -> int:
    """A lease lives as long as its worker counts as alive without a heartbeat,
    so a dead worker's devices come free when the reconciler requeues its jobs."""
    return int(settings.WORKER_DEAD_AFTER_SECONDS * 1000)


def lease_key(host: str, device: str) -> str:
    return devicelease.lease_key(settings.REDIS_PREFIX, host, device)


def acquire(host: str, candidates: list[str], count: int, job_id: int) -> list[str] | None:
    """Lease ``count`` of the ``candidates`` devices for the job, or return None."""
    return devicelease.acquire(client(), settings.REDIS_PREFIX, host, candidates, count, job_id, ttl_ms())


def refresh(host: str, devices: Iterable[str], job_id: int) -> list[str]:
    """Re-assert a running job's leases, setting them again where they are
    gone (a restarted Redis, a late heartbeat) but never over another job's.
    Returns the devices another holder has."""
    return devicelease.refresh(client(), settings.REDIS_PREFIX, host, list(devices), job_id, ttl_ms())


def release(host: str, devices: Iterable[str], job_id: int) -> None:
    devicelease.release(client(), settings.REDIS_PREFIX, host, list(devices), job_id)


def holder(host: str, device: str) -> str | None:
    """Who holds the device now: a job id, another holder's name, or None."""
    return devicelease.holder(client(), settings.REDIS_PREFIX, host, device)
