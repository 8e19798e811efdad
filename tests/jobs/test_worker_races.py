"""Two workers racing for the same jobs and devices never both get one: a
property-based test over random interleavings of what workers do (claim a
job, lease devices and start it, finish it, beat), of leases expiring under
a worker that is late to beat, and of a worker dying and the reconciler
requeueing its jobs. Every step is the real code: the conditional-UPDATE
claim and transitions in the database, the Lua lease scripts in Redis."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from jobs import leases, reconcile, runner
from jobs.bus import client
from jobs.models import Job, Status, Worker
from jobs.worker import refresh_leases
from jobs.workerinfo import WorkerInfo
from tests.processes import wait_for

HOST = "racehost"
DEVICES = ["gpu0", "gpu1"]
WORKERS = 2
JOBS = 3


def clear_redis() -> None:
    prefix = settings.CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"]
    for key in [*client().keys(leases.lease_key(HOST, "*")), prefix + "gpu", prefix + "cpu"]:
        client().delete(key)


def new_worker(slot: int) -> WorkerInfo:
    info = WorkerInfo(id=f"w{slot}-{timezone.now().timestamp()}", host=HOST,
                      devices=[{"id": d, "kind": "gpu"} for d in DEVICES])
    Worker.objects.create(id=info.id, hostname=HOST, pid=slot, devices=info.devices)
    return info


class Race(RuleBasedStateMachine):
    """Workers on one host, both offering its two GPUs; jobs asking for one."""

    def __init__(self) -> None:
        super().__init__()
        Job.objects.all().delete()
        Worker.objects.all().delete()
        clear_redis()
        owner = User.objects.get_or_create(username="racer")[0]
        self.jobs = [Job.objects.create(kind="sleep", name=f"j{n}", owner=owner, resources={"device": "gpu", "count": 1})
                     for n in range(JOBS)]
        self.workers = [new_worker(slot) for slot in range(WORKERS)]
        # What each worker believes it runs: job id -> devices.
        self.running: list[dict[int, list[str]]] = [{} for _ in range(WORKERS)]

    def job(self, index: int) -> Job:
        return Job.objects.get(pk=self.jobs[index].pk)

    @rule(w=st.integers(0, WORKERS - 1), j=st.integers(0, JOBS - 1))
    def claim_and_start(self, w: int, j: int) -> None:
        """One runner thread: claim, lease, start (or give the lease back)."""
        worker, job = self.workers[w], self.job(j)
        if not runner.claim(job, worker):
            return
        candidates, count, _ = worker.candidates(job.resources)
        devices = runner.take_devices(job, worker, candidates, count)
        if devices is None:
            job.transition(Status.QUEUED, frm=[Status.WAITING], expect={"worker": worker.id}, worker="")
            return
        if runner.start(job, worker, devices):
            self.running[w][job.pk] = devices
        else:
            leases.release(HOST, devices, job.pk)

    @rule(w=st.integers(0, WORKERS - 1), data=st.data())
    def finish(self, w: int, data: st.DataObject) -> None:
        if not self.running[w]:
            return
        job_id = data.draw(st.sampled_from(sorted(self.running[w])))
        devices = self.running[w].pop(job_id)
        Job.objects.get(pk=job_id).transition(Status.DONE, frm=[Status.RUNNING],
                                              expect={"worker": self.workers[w].id})
        leases.release(HOST, devices, job_id)

    @rule(w=st.integers(0, WORKERS - 1))
    def beat(self, w: int) -> None:
        Worker.objects.filter(id=self.workers[w].id).update(last_seen=timezone.now())
        refresh_leases(self.workers[w])

    @rule(device=st.sampled_from(DEVICES))
    def lease_expires(self, device: str) -> None:
        """A worker late to beat (or Redis restarted without its data): the lease goes."""
        key = leases.lease_key(HOST, device)
        client().pexpire(key, 1)
        wait_for(lambda: not client().exists(key), timeout=5, what="the lease to expire")

    @rule(w=st.integers(0, WORKERS - 1))
    def worker_dies(self, w: int) -> None:
        """Its processes die with it; its leases expire; the reconciler requeues
        its jobs; a new worker process takes its place."""
        dead = self.workers[w]
        for devices in self.running[w].values():
            for device in devices:
                client().pexpire(leases.lease_key(HOST, device), 1)
        self.running[w] = {}
        Worker.objects.filter(id=dead.id).update(
            last_seen=timezone.now() - timedelta(seconds=settings.WORKER_DEAD_AFTER_SECONDS + 1))
        # The live workers' heartbeat threads beat every few seconds whatever the steps take; on a
        # loaded machine one example can outlast the dead limit, and the reconciler would then (rightly)
        # requeue the jobs of a worker this model holds alive.
        for other in range(WORKERS):
            if other != w:
                self.beat(other)
        reconcile.reconcile()
        self.workers[w] = new_worker(w)

    @invariant()
    def no_device_runs_two_jobs(self) -> None:
        believed = [device for running in self.running for devices in running.values() for device in devices]
        assert len(believed) == len(set(believed)), f"two live workers run jobs on one device: {self.running}"
        held = Job.objects.filter(status=Status.RUNNING).values_list("held", flat=True)
        recorded = [device for record in held for device in record["devices"]]
        assert len(recorded) == len(set(recorded)), f"the database has two running jobs on one device: {held}"

    @invariant()
    def no_job_runs_twice(self) -> None:
        owners = [job for running in self.running for job in running]
        assert len(owners) == len(set(owners)), f"a job runs on two workers: {self.running}"
        for w, running in enumerate(self.running):
            for job_id in running:
                job = Job.objects.get(pk=job_id)
                assert (job.status, job.worker) == (Status.RUNNING, self.workers[w].id)

    @invariant()
    def every_running_job_holds_its_leases(self) -> None:
        for running in self.running:
            for job_id, devices in running.items():
                for device in devices:
                    holder = client().get(leases.lease_key(HOST, device))
                    assert holder in (None, str(job_id).encode()), f"{device} leased to {holder} under job {job_id}"


@pytest.mark.django_db
def test_two_workers_never_run_one_job_or_share_a_device():
    try:
        run_state_machine_as_test(Race, settings=hypothesis_settings(
            max_examples=60, stateful_step_count=30, deadline=None, derandomize=True,
            suppress_health_check=[HealthCheck.too_slow]))
    finally:
        clear_redis()


def _first_gpu_jobs() -> tuple[Job, Job, WorkerInfo, WorkerInfo]:
    clear_redis()
    owner = User.objects.get_or_create(username="racer")[0]
    jobs = [Job.objects.create(kind="sleep", name=name, owner=owner, resources={"device": "gpu", "ids": [0]})
            for name in ("slow to start", "next")]
    return jobs[0], jobs[1], new_worker(0), new_worker(1)


@pytest.mark.django_db
def test_a_job_whose_lease_ran_out_before_its_start_committed_waits_again_when_another_took_the_device():
    """The lease is taken, then the database is slow to record the start:
    the lease runs out, another worker takes the device, and only one of
    the two may run on it (the suite once saw both)."""
    slow, other, first_worker, second_worker = _first_gpu_jobs()
    assert runner.claim(slow, first_worker)
    assert runner.take_devices(slow, first_worker, ["gpu0"], 1) == ["gpu0"]
    client().delete(leases.lease_key(HOST, "gpu0"))  # its time ran out
    assert runner.claim(other, second_worker)
    assert runner.take_devices(other, second_worker, ["gpu0"], 1) == ["gpu0"]
    assert runner.start(other, second_worker, ["gpu0"])

    with pytest.raises(runner.LeaseLost, match="another job took gpu0"):
        runner.start(slow, first_worker, ["gpu0"])
    slow.refresh_from_db()
    assert (slow.status, slow.held, slow.started_at) == (Status.WAITING, {}, None)
    assert not slow.transitions.filter(status=Status.RUNNING).exists()
    assert leases.holder(HOST, "gpu0") == str(other.pk)


@pytest.mark.django_db
def test_a_job_whose_lease_ran_out_before_its_start_committed_takes_it_again_when_it_is_still_free():
    slow, _, first_worker, _ = _first_gpu_jobs()
    assert runner.claim(slow, first_worker)
    assert runner.take_devices(slow, first_worker, ["gpu0"], 1) == ["gpu0"]
    client().delete(leases.lease_key(HOST, "gpu0"))
    assert runner.start(slow, first_worker, ["gpu0"])
    assert leases.holder(HOST, "gpu0") == str(slow.pk)
