"""The order in which pending jobs get devices, and why each one waits.

The jobs asking for devices of one class (GPUs, or CPU slots) are served in
this order:

1. the jobs staff moved to the front, the latest move first;
2. by priority: high (which only staff give), normal, low;
3. fair share: the job of the user holding the fewest devices of the class
   goes first, counting, as the order is laid out, the devices the jobs
   already placed before it will take, so that two users' queues interleave
   instead of the first to submit taking every device;
4. the oldest first.

A job with which its owner would hold more than their limit
(``DeviceLimit``) goes to the end, in the same order, and waits for one of
their jobs to end; the jobs behind it may start meanwhile.

The runner lets a waiting job lease devices only when no job before it
could use them now (``first_blocker``); the Resources page and a job's page
show the same places and why each job waits (``reason``), so what they say
is what the workers do.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import User

from . import placement
from .models import PENDING, DeviceLimit, Job, JobNode, Priority, Status, Worker
from .workerinfo import WorkerInfo

PRIORITY_RANK = {Priority.HIGH: 0, Priority.NORMAL: 1, Priority.LOW: 2}
UNITS = {"gpu": ("GPU", "GPUs"), "cpu": ("CPU slot", "CPU slots")}


def devices_wanted(job: Job) -> int:
    """All the devices the job holds while it runs, over every machine it runs on."""
    return job.device_count * int(job.resources.get("nodes", 1))


def units(device_class: str, count: int) -> str:
    one, many = UNITS.get(device_class, (device_class.upper(), device_class.upper()))
    return f"{count} {one if count == 1 else many}"


@dataclass
class Place:
    job: Job
    position: int
    # With it, its owner would hold more than their limit, counting their jobs placed before it.
    over_limit: bool
    reason: str = ""


@dataclass
class Queue:
    """One device class's pending jobs in order, with what the order was made from."""

    device_class: str
    places: list[Place]
    held: Counter[int] = field(default_factory=Counter)  # devices of the class each owner holds now
    limits: dict[int, int] = field(default_factory=dict)  # each owner's limit; 0: none

    def place_of(self, job_id: int) -> Place | None:
        return next((place for place in self.places if place.job.pk == job_id), None)

    def can_start(self, job: Job) -> bool:
        """Whether the owner's limit lets the job start now, by what they hold now."""
        limit = self.limits.get(job.owner_id, 0)
        return not limit or self.held[job.owner_id] + devices_wanted(job) <= limit


def held_now(device_class: str) -> Counter[int]:
    """Devices of the class each user's running jobs hold, by the database's record."""
    held: Counter[int] = Counter()
    for owner, record in Job.objects.filter(status=Status.RUNNING, resources__device=device_class).values_list(
            "owner_id", "held"):
        held[owner] += len(record.get("devices", []))
    for owner, record in JobNode.objects.filter(status=Status.RUNNING, job__resources__device=device_class).values_list(
            "job__owner_id", "held"):
        held[owner] += len(record.get("devices", []))
    return held


def limits_of(owner_ids: set[int]) -> dict[int, int]:
    """Each user's limit: their own where staff set one, else the default."""
    own = dict(DeviceLimit.objects.filter(user_id__in=owner_ids).values_list("user_id", "limit"))
    return {owner: own.get(owner, settings.DEVICE_LIMIT_PER_USER) for owner in owner_ids}


def _own_order(job: Job) -> tuple[bool, float, int, datetime, int]:
    """How one user's jobs are ordered among themselves."""
    front = -job.front_at.timestamp() if job.front_at else 0.0
    return (job.front_at is None, front, PRIORITY_RANK.get(job.priority, 1), job.queued_at, job.pk)


def queue(device_class: str) -> Queue:
    pending = list(Job.objects.filter(status__in=PENDING, resources__device=device_class).select_related("owner"))
    held = held_now(device_class)
    limits = limits_of({job.owner_id for job in pending})
    by_owner: dict[int, list[Job]] = defaultdict(list)
    for job in sorted(pending, key=_own_order, reverse=True):
        by_owner[job.owner_id].append(job)  # each user's next job is the last of their list
    counted = Counter(held)
    placed: list[Place] = []
    over: list[Place] = []
    while by_owner:
        def rank(owner: int) -> tuple:
            front_missing, front, priority, queued_at, pk = _own_order(by_owner[owner][-1])
            return front_missing, front, priority, counted[owner], queued_at, pk

        owner = min(by_owner, key=rank)
        job = by_owner[owner].pop()
        if not by_owner[owner]:
            del by_owner[owner]
        limit = limits.get(owner, 0)
        if limit and counted[owner] + devices_wanted(job) > limit:
            over.append(Place(job, 0, over_limit=True))
            continue
        counted[owner] += devices_wanted(job)
        placed.append(Place(job, 0, over_limit=False))
    places = placed + over
    for position, place in enumerate(places, start=1):
        place.position = position
    return Queue(device_class, places, held, limits)


def _host_of_workers() -> dict[str, str]:
    return dict(Worker.alive().values_list("id", "hostname"))


def _competes(place: Place, job_candidates: set[str], worker: WorkerInfo, hosts: dict[str, str]) -> bool:
    """Whether the job could take one of the devices ``job_candidates`` on the worker's machine:
    it waits on a worker there, or it is queued and the worker could run it."""
    other = place.job
    if other.status == Status.WAITING and hosts.get(other.worker) != worker.host:
        return False
    candidates, _count, problem = worker.candidates(other.resources)
    return not problem and bool(job_candidates & set(candidates))


def first_blocker(order: Queue, job: Job, worker: WorkerInfo) -> Place | None:
    """The first job before ``job`` in the order that could start now and would
    take devices it could use on this worker's machine; None when ``job`` may
    lease its devices (as far as the order goes: its owner's limit aside)."""
    mine = order.place_of(job.pk)
    if mine is None:
        return None
    candidates = set(worker.candidates(job.resources)[0])
    hosts = _host_of_workers()
    for place in order.places[:mine.position - 1]:
        if order.can_start(place.job) and _competes(place, candidates, worker, hosts):
            return place
    return None


def last_waiting_here(order: Queue, worker: WorkerInfo) -> Job | None:
    """The job waiting on this worker that comes last in the order: the one
    that goes back to the queue when a queued job before it finds no thread free."""
    here = [place.job for place in order.places if place.job.status == Status.WAITING and place.job.worker == worker.id]
    return here[-1] if here else None


def _free_per_machine(device_class: str) -> dict[str, tuple[list[str], list[str]]]:
    """Each live machine's devices of the class: (all, free by the database's record)."""
    machines: dict[str, tuple[list[str], list[str]]] = {}
    for worker in Worker.alive().order_by("last_seen"):
        ids = [d["id"] for d in worker.devices if d["kind"] == device_class]
        busy = placement.devices_in_use(worker.hostname)
        machines[worker.hostname] = (ids, [d for d in ids if d not in busy])
    return machines


def _behind(places: list[Place]) -> str:
    """"Behind 2 of alice's jobs." or "Behind 3 jobs: 2 of alice's and 1 of bob's." """
    counts = Counter(place.job.owner.username for place in places).most_common()
    if len(counts) == 1:
        owner, n = counts[0]
        return f"Behind {'one' if n == 1 else n} of {owner}'s jobs."
    parts = [f"{n} of {owner}'s" for owner, n in counts]
    return f"Behind {len(places)} jobs: {', '.join(parts[:-1])} and {parts[-1]}."


def _limit_reason(order: Queue, place: Place) -> str:
    job = place.job
    owner = job.owner.username
    limit = order.limits.get(job.owner_id, 0)
    held = order.held[job.owner_id]
    ahead = sum(devices_wanted(p.job) for p in order.places if p.job.owner_id == job.owner_id
                and not p.over_limit and p.position < place.position)
    more = f", and {owner}'s jobs before it will take {ahead} more" if ahead else ""
    if devices_wanted(job) > limit:
        return (f"It asks for {units(order.device_class, devices_wanted(job))}, more than the "
                f"{units(order.device_class, limit)} {owner} may hold at once.")
    return (f"Held back: {owner} may hold {units(order.device_class, limit)} at once and holds {held}{more}; "
            f"it starts when one of {owner}'s jobs ends.")


def _next_reason(order: Queue, job: Job, machines: dict[str, tuple[list[str], list[str]]]) -> str:
    """Why the first job of the order has not started yet."""
    starting = "Next in line; a worker is taking it." if job.status == Status.QUEUED else "Next in line; starting."
    if not machines:
        return "Next in line; no worker is running: it starts when one does."
    kind = order.device_class
    if "ids" in job.resources:
        wanted = [f"{kind}{i}" for i in job.resources["ids"]]
        busy = [d for d in wanted if not any(d in free for _all, free in machines.values())]
        if not busy:
            return starting
        return f"Next in line, for {', '.join(busy)} to come free."
    count = job.device_count
    largest = max(len(ids) for ids, _free in machines.values())
    if largest == 0:
        return f"Next in line; no running worker offers {UNITS.get(kind, (kind, kind))[1]}."
    if count > largest:
        return f"It needs {units(kind, count)} on one machine; the largest has {largest}."
    most_free = max(len(free) for _ids, free in machines.values())
    if most_free >= count:
        return starting
    if count == 1:
        total = sum(len(ids) for ids, _free in machines.values())
        return f"Next in line, for the first {UNITS.get(kind, (kind,))[0]} to come free (all {total} are in use)."
    return f"Next in line: it needs {units(kind, count)} on one machine, and the most free on one is {most_free}."


def explained(device_class: str) -> Queue:
    """The class's order with each place's reason for waiting."""
    order = queue(device_class)
    machines = _free_per_machine(device_class) if order.places else {}
    for place in order.places:
        if place.over_limit or not order.can_start(place.job):
            place.reason = _limit_reason(order, place)
            continue
        ahead = [p for p in order.places[:place.position - 1] if order.can_start(p.job)]
        place.reason = _behind(ahead) if ahead else _next_reason(order, place.job, machines)
    return order


def of_job(job: Job) -> Place | None:
    """The job's place in its class's order, with its reason; None once it left the queue."""
    if job.status not in PENDING:
        return None
    return explained(job.device_class).place_of(job.pk)


def users_sharing() -> list[dict]:
    """Each user who holds or waits for devices, or has a limit of their own:
    the devices of each class they hold, their jobs waiting, and their limit."""
    held: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(UNITS, 0))
    waiting: Counter[int] = Counter()
    for device_class in UNITS:
        for owner, count in held_now(device_class).items():
            held[owner][device_class] = count
    for owner in Job.objects.filter(status__in=PENDING).values_list("owner_id", flat=True):
        waiting[owner] += 1
    own = dict(DeviceLimit.objects.values_list("user_id", "limit"))
    ids = set(held) | set(waiting) | set(own)
    names = dict(User.objects.filter(pk__in=ids).values_list("pk", "username"))
    return [{"user": names[owner], "held": held[owner] if owner in held else dict.fromkeys(UNITS, 0),
             "waiting": waiting[owner], "limit": own.get(owner, settings.DEVICE_LIMIT_PER_USER),
             "own_limit": owner in own}
            for owner in sorted(ids, key=lambda pk: names.get(pk, "")) if owner in names]
