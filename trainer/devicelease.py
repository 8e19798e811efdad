"""Device leases in Redis, shared by the job side (``jobs.leases``) and the
model server, neither importing Django nor torch: ``<prefix>:lease:<host>:<device>``
holds its holder, a job id or ``modelserver:<pid>``, with a time to live that
its holder refreshes.

Taking several devices is one Lua script, so a holder gets all it asked for
or nothing; refreshing and releasing never touch another holder's key.
"""

from __future__ import annotations

import os
import socket

import redis

# KEYS: candidate lease keys in order of preference. ARGV: count, holder, ttl.
# Takes the first `count` free keys, or none; returns the keys taken.
ACQUIRE = """
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

# KEYS: the holder's lease keys. ARGV: holder, ttl. Sets each key that is free
# or the holder's; returns the keys another holder has.
REFRESH = """
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

# KEYS: the holder's lease keys. ARGV: holder. Deletes those it still holds.
RELEASE = """
for _, k in ipairs(KEYS) do
  if redis.call('GET', k) == ARGV[1] then redis.call('DEL', k) end
end
return 1
"""


def host_name() -> str:
    """The machine's name in lease keys: ``WORKER_HOST`` where set (a container
    whose own name is random), else the host name, as workers name it."""
    return os.environ.get("WORKER_HOST") or socket.gethostname()


def lease_key(prefix: str, host: str, device: str) -> str:
    return f"{prefix}:lease:{host}:{device}"


def _devices(prefix: str, host: str, keys: list[bytes]) -> list[str]:
    start = len(lease_key(prefix, host, ""))
    return [k.decode()[start:] for k in keys]


def acquire(client: redis.Redis, prefix: str, host: str, candidates: list[str], count: int,
            holder: object, ttl_ms: int) -> list[str] | None:
    """Lease ``count`` of the ``candidates`` devices for ``holder``, or return None."""
    if count > len(candidates):
        return None
    keys = [lease_key(prefix, host, device) for device in candidates]
    taken = client.eval(ACQUIRE, len(keys), *keys, count, str(holder), ttl_ms)
    return _devices(prefix, host, taken) or None


def refresh(client: redis.Redis, prefix: str, host: str, devices: list[str], holder: object,
            ttl_ms: int) -> list[str]:
    """Re-assert ``holder``'s leases, setting them again where they are gone (a
    restarted Redis, a late heartbeat) but never over another holder's.
    Returns the devices another holder has."""
    keys = [lease_key(prefix, host, device) for device in devices]
    if not keys:
        return []
    return _devices(prefix, host, client.eval(REFRESH, len(keys), *keys, str(holder), ttl_ms))


def release(client: redis.Redis, prefix: str, host: str, devices: list[str], holder: object) -> None:
    keys = [lease_key(prefix, host, device) for device in devices]
    if keys:
        client.eval(RELEASE, len(keys), *keys, str(holder))


def holder(client: redis.Redis, prefix: str, host: str, device: str) -> str | None:
    """Who holds the device now, or None."""
    value = client.get(lease_key(prefix, host, device))
    return value.decode() if value is not None else None
