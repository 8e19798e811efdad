"""A job waiting for devices gives way to a queued job that comes before it
only once that job has gone unclaimed for ``GIVE_WAY_AFTER_SECONDS``
(``jobs.runner.wait_for_devices``): the real loop in a thread, over the test
database and the suite's Redis, on each side of the threshold."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from jobs import runner
from jobs.models import Job, Status, Worker
from jobs.workerinfo import WorkerInfo
from tests.processes import wait_for

HOST = "givehost"


def worker_on_host(name: str) -> WorkerInfo:
    info = WorkerInfo(id=name, host=HOST, devices=[{"id": "cpu0", "kind": "cpu", "index": 0}])
    Worker.objects.create(id=info.id, hostname=HOST, pid=1, devices=info.devices)
    return info


class Waiter(threading.Thread):
    """``wait_for_devices`` of one job, its answer kept."""

    def __init__(self, job: Job, worker: WorkerInfo) -> None:
        super().__init__(daemon=True)
        self.job, self.worker, self.answer, self.took = job, worker, "unset", 0.0

    def run(self) -> None:
        began = time.monotonic()
        try:
            self.answer = runner.wait_for_devices(self.job, self.worker)
        finally:
            self.took = time.monotonic() - began
            connection.close()


@pytest.fixture
def queue(transactional_db, alice, settings):
    """A job queued a minute ago, then one queued now and claimed by a worker on ``HOST``.
    The workers' rows are never touched again, so they must not count as dead
    (the suite's 3 s) before a slow machine reaches the end of a test: a dead
    worker's claim blocks nothing, and the waiting job would take the device."""
    settings.WORKER_DEAD_AFTER_SECONDS = 120
    first = Job.objects.create(kind="sleep", name="first", owner=alice, params={"steps": 1},
                               resources={"device": "cpu", "count": 1}, queued_at=timezone.now() - timedelta(minutes=1))
    waiting = Job.objects.create(kind="sleep", name="second", owner=alice, params={"steps": 1},
                                 resources={"device": "cpu", "count": 1})
    worker = worker_on_host("here")
    assert runner.claim(waiting, worker)
    return first, waiting, worker


def test_a_queued_job_claimed_within_the_threshold_is_waited_for(queue):
    first, waiting, worker = queue
    waiter = Waiter(waiting, worker)
    waiter.start()
    time.sleep(0.3)
    assert runner.claim(first, worker_on_host("other-thread"))  # another thread's claim, under the threshold
    time.sleep(runner.GIVE_WAY_AFTER_SECONDS * 2.5)
    assert waiter.is_alive()
    waiting.refresh_from_db()
    assert waiting.status == Status.WAITING
    assert not waiting.transitions.filter(message__startswith="Back in the queue").exists()
    waiting.transition(Status.ABORTED, frm=[Status.WAITING])
    waiter.join(10)
    assert waiter.answer is None


def test_a_queued_job_left_unclaimed_past_the_threshold_is_taken_on_in_its_place(queue):
    first, waiting, worker = queue
    waiter = Waiter(waiting, worker)
    waiter.start()
    wait_for(lambda: not waiter.is_alive(), timeout=30, what="the waiting job to give way")
    assert isinstance(waiter.answer, Job) and waiter.answer.pk == first.pk
    assert waiter.took >= runner.GIVE_WAY_AFTER_SECONDS
    first.refresh_from_db()
    waiting.refresh_from_db()
    assert first.status == Status.WAITING and first.worker == worker.id
    assert waiting.status == Status.QUEUED and waiting.worker == "" and waiting.attempt == 0
    assert waiting.transitions.last().message == (
        f"Back in the queue: alice's job “first” (#{first.pk}) comes first, and no other thread of worker givehost "
        "was free to take it")
