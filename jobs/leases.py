"""Device leases in Redis: ``<prefix>:lease:<host>:<device>`` holds a job id.

Leases expire unless their worker refreshes them, so devices come back by
themselves when a worker dies. Taking several devices is one Lua script, so a
job gets all it asked for or nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from .bus import client, key


def ttl_ms() -> int:
    """A lease lives as long as its worker counts as alive without a heartbeat,
    so a dead worker's devices come free when the reconciler requeues its jobs."""
    return int(settings.WORKER_DEAD_AFTER_SECONDS * 1000)

# KEYS: candidate lease keys in order of preference. ARGV: count, job id, ttl.
# Takes the first `count` free keys, or none; returns the keys taken.
_ACQUIRE = """
local want = tonumber(ARGV[1])
local free = {}
for _, k in ipairs(KEYS) do
  local holder = redis.call('GET', k)
  if not holder or holder == ARGV[2] then
    table.insert(free, k)
    if #free == want then break end
  end
end
if #free < want then return {} end
for _, k in ipairs(free) do redis.call('SET', k, ARGV[2], 'PX', ARGV[3]) end
return free
"""


def lease_key(host: str, device: str) -> str:
    return key("lease", host, device)


def acquire(host: str, candidates: list[str], count: int, job_id: int) -> list[str] | None:
    """Lease ``count`` of the ``candidates`` devices for the job, or return None."""
    if count > len(candidates):
        return None
    keys = [lease_key(host, device) for device in candidates]
    taken = client().eval(_ACQUIRE, len(keys), *keys, count, job_id, ttl_ms())
    if not taken:
        return None
    prefix = lease_key(host, "")
    return [k.decode()[len(prefix):] for k in taken]


# KEYS: the job's lease keys. ARGV: job id, ttl. Sets each key that is free
# or the job's; returns the keys another job holds.
_REFRESH = """
local others = {}
for _, k in ipairs(KEYS) do
  local holder = redis.call('GET', k)
  if not holder or holder == ARGV[1] then
    redis.call('SET', k, ARGV[1], 'PX', ARGV[2])
  else
    table.insert(others, k)
  end
end
return others
"""


def refresh(host: str, devices: Iterable[str], job_id: int) -> list[str]:
    """Re-assert a running job's leases, setting them again where they are
    gone (a restarted Redis, a late heartbeat) but never over another job's.
    Returns the devices another job holds."""
    keys = [lease_key(host, device) for device in devices]
    if not keys:
        return []
    others = client().eval(_REFRESH, len(keys), *keys, job_id, ttl_ms())
    prefix = lease_key(host, "")
    return [k.decode()[len(prefix):] for k in others]


_RELEASE = """
for _, k in ipairs(KEYS) do
  if redis.call('GET', k) == ARGV[1] then redis.call('DEL', k) end
end
return 1
"""


def release(host: str, devices: Iterable[str], job_id: int) -> None:
    keys = [lease_key(host, device) for device in devices]
    if keys:
        client().eval(_RELEASE, len(keys), *keys, job_id)
