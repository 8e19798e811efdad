"""Two users' queues through a real worker whose devices are two CPU slots
(a worker's slots are leased, counted and shared exactly as its GPUs are):
the order jobs start in, a user's limit, priority, and that every job runs."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User

from jobs import queueorder, services
from jobs.models import DeviceLimit, Job, Priority, Status
from tests.jobtools import wait_status
from tests.processes import wait_for

SLOTS = "2"


def submit(owner: User, name: str, priority: str = Priority.NORMAL) -> Job:
    return services.submit(owner, "sleep", name, {"steps": 3, "step_seconds": 0.4},
                           {"device": "cpu", "count": 1}, priority=priority)


def run_all(jobs: list[Job]) -> list[Job]:
    """Every job done (none starves), in the order they started."""
    done = [wait_status(job, Status.DONE, timeout=180) for job in jobs]
    return sorted(done, key=lambda job: job.started_at)


def held_at(jobs: list[Job], owner_id: int, moment) -> int:
    return sum(1 for job in jobs if job.owner_id == owner_id and job.started_at < moment < job.finished_at)


def claimed_at(job: Job):
    """When a worker's thread last took the job from the queue before it started."""
    return job.transitions.filter(status=Status.WAITING, at__lte=job.started_at).latest("at").at


def first_in_line_at(jobs: list[Job], started: Job, moment) -> list[str]:
    """The jobs still waiting at ``moment`` that came before ``started``: none
    of a higher priority, none of the same priority whose owner then held
    fewer slots, none as high whose owner held as many and that was queued earlier."""
    def rank(job: Job) -> tuple:
        return queueorder.PRIORITY_RANK[job.priority], held_at(jobs, job.owner_id, moment), job.queued_at

    waiting = [job for job in jobs if job is not started and job.queued_at < moment < job.started_at]
    return [job.name for job in waiting if rank(job) < rank(started)]


def assert_each_start_was_the_first_in_line(jobs: list[Job]) -> None:
    """Each job was first in line at some moment between its claim and its
    start. The worker decides to start a waiting job, then leases its slot
    and records the start: on a loaded machine a job that held a slot could
    end in between (its owner then holding one fewer), so the order is
    judged at each moment of that window where it changed (just before and
    after another job's start or end), not at the recorded start alone."""
    tick = timedelta(microseconds=1)
    for started in jobs:
        opened, closed = claimed_at(started), started.started_at
        changes = [at + step for job in jobs if job is not started for at in (job.started_at, job.finished_at)
                   if opened < at < closed for step in (-tick, tick)]
        before = {moment: first_in_line_at(jobs, started, moment) for moment in [opened + tick, *changes, closed]}
        assert any(not names for names in before.values()), (
            f"{started.name} started while, at every moment since its claim, jobs came before it: "
            f"{sorted(before.items())}")


def overlap(first: Job, second: Job) -> bool:
    return first.started_at < second.finished_at and second.started_at < first.finished_at


def test_a_later_users_jobs_start_beside_the_first_users_queue_not_behind_it(alice, bob, worker_factory):
    """alice queues four jobs, then bob two and one of low priority. Each
    job starts when it is first in line (first come, first served would
    start alice's second while she held a slot and bob none), each user's
    own jobs in their order, and the low one last. Which comes first when
    both hold nothing is age: how the starts interleave follows how long
    each job took on the machine, so no fixed order is asked for."""
    jobs = [submit(alice, f"a{i}") for i in range(4)]
    bob_low = submit(bob, "b-low", Priority.LOW)
    jobs += [submit(bob, f"b{i}") for i in range(2)] + [bob_low]
    assert [place.job.name for place in queueorder.explained("cpu").places] == [
        "a0", "b0", "a1", "b1", "a2", "a3", "b-low"]
    worker_factory(CPU_SLOTS=SLOTS)
    done = run_all(jobs)
    assert_each_start_was_the_first_in_line(done)
    started = [job.name for job in done]
    assert [name for name in started if name.startswith("a")] == ["a0", "a1", "a2", "a3"]
    assert started[-1] == "b-low"


def test_a_user_at_their_limit_waits_while_the_other_users_jobs_use_the_free_slot(alice, bob, worker_factory):
    DeviceLimit.objects.create(user=alice, limit=1)
    alices = [submit(alice, f"a{i}") for i in range(3)]
    bobs = [submit(bob, f"b{i}") for i in range(3)]
    worker_factory(CPU_SLOTS=SLOTS)

    def alice_held_back() -> bool:
        reasons = [place.reason for place in queueorder.explained("cpu").places if place.job.owner_id == alice.pk]
        return any(reason.startswith("Held back: alice may hold 1 CPU slot at once and holds 1") for reason in reasons)

    wait_for(alice_held_back, timeout=60, what="one of alice's jobs to be held back by her limit")
    done = run_all(alices + bobs)
    mine = [job for job in done if job.owner_id == alice.pk]
    assert not any(overlap(a, b) for i, a in enumerate(mine) for b in mine[i + 1:])
    # The slot alice may not use went to bob's jobs meanwhile, not left idle.
    assert any(overlap(a, b) for a in mine for b in done if b.owner_id == bob.pk)
