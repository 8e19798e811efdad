"""Jobs run end to end through a real Celery worker, real Redis and real
child processes."""

import html
import re
import sys
import sysconfig
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from jobs import queueorder, reconcile, runner, services
from jobs.models import Job, Status, Worker
from jobs.queue import enqueue
from tests.clients import signed_in
from tests.jobtools import (
    alive,
    all_events_of_ended,
    child_pid,
    events_of,
    history,
    submit_sleep,
    wait_status,
)
from tests.processes import wait_for
from trainer import eventlog


def test_a_job_runs_to_done_and_its_events_arrive_in_order(alice, worker):
    job = submit_sleep(alice, steps=4)
    job = wait_status(job, Status.DONE)

    assert history(job) == ["queued", "waiting", "running", "done"]
    assert job.progress == 1.0 and job.attempt == 1 and job.error == ""
    assert job.started_at and job.finished_at and job.finished_at >= job.started_at
    events = all_events_of_ended(job)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    statuses = [e["data"]["status"] for e in events if e["kind"] == "status"]
    assert statuses == ["queued", "waiting", "running", "done"]
    assert [e["data"]["step"] for e in events if e["kind"] == "progress"] == [1, 2, 3, 4]
    kinds = [e["kind"] for e in events]
    assert kinds.index("started") < kinds.index("progress") < len(kinds) - 1 == kinds.index("status", kinds.index("progress"))
    logged = [line for e in events if e["kind"] == "log" for line in e["data"]["lines"]]
    assert logged == [f"step {i} of 4" for i in range(1, 5)]
    assert (job.folder / "log.txt").read_text().splitlines() == logged


def test_a_failing_job_is_failed_with_its_own_message(alice, worker):
    job = wait_status(submit_sleep(alice, steps=1, exit_code=3), Status.FAILED)
    assert job.error == "failed on purpose with code 3"
    assert history(job)[-1] == "failed"


def test_abort_ends_a_running_job_and_its_process(alice, worker):
    job = submit_sleep(alice, steps=200, step_seconds=0.1)
    pid = child_pid(job)
    wait_status(job, Status.RUNNING)
    services.abort(job, alice)
    job = wait_status(job, Status.ABORTED, timeout=10)
    assert not alive(pid)
    assert history(job) == ["queued", "waiting", "running", "aborted"]


def test_abort_kills_a_process_that_ignores_sigterm_after_the_grace_period(alice, worker):
    job = submit_sleep(alice, steps=200, step_seconds=0.1, ignore_term=True)
    pid = child_pid(job)
    wait_status(job, Status.RUNNING)
    asked = time.monotonic()
    services.abort(job, alice)
    wait_status(job, Status.ABORTED, timeout=15)
    took = time.monotonic() - asked
    assert not alive(pid)
    assert took >= 1.5  # JOB_ABORT_GRACE_SECONDS in the test environment


def test_aborting_a_queued_job_means_it_never_runs(alice, worker):
    blocker = submit_sleep(alice, steps=30, step_seconds=0.1)
    wait_status(blocker, Status.RUNNING)
    queued = submit_sleep(alice, steps=1)
    wait_status(queued, Status.WAITING, Status.QUEUED)
    services.abort(queued, alice)
    services.abort(blocker, alice)
    wait_status(blocker, Status.ABORTED)
    time.sleep(1)
    queued = wait_status(queued, Status.ABORTED)
    assert not events_of(queued, "started")
    assert queued.started_at is None


def test_two_jobs_for_one_slot_run_one_after_the_other(alice, worker):
    first = submit_sleep(alice, steps=10, step_seconds=0.1, name="first")
    second = submit_sleep(alice, steps=10, step_seconds=0.1, name="second")
    wait_status(second, Status.WAITING, Status.RUNNING)
    first, second = wait_status(first, Status.DONE), wait_status(second, Status.DONE)
    assert first.finished_at <= second.started_at
    assert "waiting" in history(second)


@pytest.mark.parametrize("queued_seconds_ago", [1.0, 60.0], ids=["moments-ago", "long-ago"])
def test_a_queued_job_no_thread_took_is_run_first_by_the_thread_of_the_job_behind_it(alice, worker, queued_seconds_ago):
    """A job queued before another (here one whose message no worker will
    ever get) comes first in the order: the younger job waits for it, and
    after ``GIVE_WAY_AFTER_SECONDS`` its thread takes the older one on and
    the younger goes back to the queue. One queued long ago may instead be
    sent again by the reconciler (``requeue_forgotten``) and claimed by
    another thread first: either way it runs first."""
    lost = Job.objects.create(kind="sleep", name="lost", owner=alice, params={"steps": 1, "step_seconds": 0.1},
                              resources={"device": "cpu", "count": 1},
                              queued_at=timezone.now() - timedelta(seconds=queued_seconds_ago))
    younger = wait_status(submit_sleep(alice, steps=1, name="younger"), Status.DONE, timeout=60)
    lost = wait_status(lost, Status.DONE, timeout=30)
    assert lost.finished_at <= younger.started_at
    assert younger.attempt == 1 and lost.attempt == 1
    if queued_seconds_ago < reconcile.FORGOTTEN_AFTER.total_seconds():
        assert history(younger)[:3] == ["queued", "waiting", "queued"]
        gave_way = younger.transitions.filter(status=Status.QUEUED).order_by("at").last()
        assert gave_way.message.startswith("Back in the queue: alice's job “lost”")


def test_a_waiting_job_shows_its_place_in_the_queue(alice, worker):
    # Long enough that none ends while the test looks, however slow the machine.
    jobs = [submit_sleep(alice, steps=600, step_seconds=0.1, name=f"j{i}") for i in range(3)]
    wait_status(jobs[0], Status.RUNNING)
    waiting = [wait_status(job, Status.WAITING) for job in jobs[1:]]
    places = [queueorder.of_job(job) for job in waiting]
    assert [place.position for place in places] == [1, 2]
    assert [place.reason for place in places] == [
        "Next in line, for the first CPU slot to come free (all 1 are in use).", "Behind one of alice's jobs."]
    for job in jobs:
        services.abort(job, alice)


def test_a_duplicated_delivery_runs_the_job_once(alice, worker):
    job = submit_sleep(alice, steps=5)
    enqueue(job)
    enqueue(job)
    job = wait_status(job, Status.DONE)
    time.sleep(1.5)  # let the duplicates arrive and be turned away
    assert len(events_of(job, "started")) == 1
    assert job.attempt == 1
    assert history(job) == ["queued", "waiting", "running", "done"]


def test_the_resources_page_shows_a_real_workers_disk_cpu_and_memory(alice, worker):
    # The CPU reading is the use between two heartbeats: there is one from the second beat on.
    wait_for(lambda: any(d.get("utilization") is not None for w in Worker.alive() for d in w.devices),
             what="a heartbeat with a CPU reading")
    client = Client()
    client.force_login(alice)
    (reported,) = client.get("/api/resources").json()["workers"]
    assert 0 < reported["disk"]["free"] <= reported["disk"]["total"]
    cpu = next(d for d in reported["devices"] if d["kind"] == "cpu")
    assert 0 <= cpu["utilization"] <= 100
    assert 0 < cpu["memory_used"] < cpu["memory_total"]
    page = client.get("/resources/").content.decode()
    assert '"disk": {"free":' in page and '"utilization":' in page


def test_a_job_that_crashes_says_one_sentence_and_logs_its_traceback_without_server_paths(alice, worker):
    job = wait_status(submit_sleep(alice, steps=1, crash=True), Status.FAILED)
    assert "\n" not in job.error and "Traceback" not in job.error and "^" not in job.error
    assert "JSONDecodeError" in job.error and "log" in job.error
    assert history(job)[-1] == "failed"

    page = signed_in(alice).get(f"/jobs/{job.pk}/").content.decode()
    log = html.unescape(re.search(r'<pre id="log" class="log">(.*?)</pre>', page, re.S).group(1))
    assert "Traceback" in log and 'File "tests/sleeper.py"' in log and 'File "json/decoder.py"' in log
    logged = [line for e in events_of(job) if e["kind"] == "log" for line in e["data"]["lines"]]
    assert 'File "tests/sleeper.py"' in "\n".join(logged)
    api_log = "\n".join(signed_in(alice).get(f"/api/jobs/{job.pk}/log").json()["lines"])
    assert 'File "tests/sleeper.py"' in api_log
    for server_path in {settings.BASE_DIR, sys.prefix, sys.base_prefix, sysconfig.get_paths()["stdlib"], job.folder}:
        assert str(server_path) not in page + "\n".join(logged) + api_log
    assert re.search(rf'action="/jobs/{job.pk}/clone" data-show-when="failed"><input[^>]*><button id="retry"', page)


@pytest.mark.parametrize("count, sizes", [(200, [200]), (201, [200, 1])])
def test_new_log_lines_are_relayed_200_to_an_event(alice, count, sizes):
    """``LOG_LINES_PER_EVENT`` (200): the lines read at once make one
    ``log`` event up to 200, and more events beyond, every line once."""
    job = Job.objects.create(kind="sleep", name="relayed", owner=alice, params={}, status=Status.RUNNING,
                             resources={"device": "cpu", "count": 1})
    job.folder.mkdir(parents=True)
    lines = [f"line {i}" for i in range(count)]
    runner.relay_log(job, lines)
    logged = [e["data"]["lines"] for e in eventlog.read_all(job.folder) if e["kind"] == "log"]
    assert [len(chunk) for chunk in logged] == sizes and sum(logged, []) == lines


@pytest.mark.parametrize("after, found", [(999, True), (1000, False)])
def test_a_failure_is_its_own_error_when_among_the_last_1000_events(alice, after, found):
    """``FAILURE_EVENTS`` (1000): the job's error is looked for among its
    last 1000 events; beyond them the failure is its exit code and log."""
    job = Job.objects.create(kind="sleep", name="relayed", owner=alice, params={}, status=Status.RUNNING,
                             resources={"device": "cpu", "count": 1})
    job.folder.mkdir(parents=True)
    eventlog.append(job.folder, "error", {"message": "out of patience"})
    for step in range(after):
        eventlog.append(job.folder, "progress", {"progress": step / after})
    (job.folder / "log.txt").write_text("last words\n")
    message = runner.failure_message(job, 3)
    assert message == ("out of patience" if found else "The job's process exited with code 3; its log shows why.")


@pytest.mark.parametrize("slots", [1, 2])
def test_a_cpu_job_computes_with_its_slots_share_of_the_cores(alice, worker_factory, slots):
    from jobs.cputhreads import machine_cores

    worker_factory(CPU_SLOTS=str(slots))
    job = wait_status(submit_sleep(alice, steps=1, step_seconds=0.01), Status.DONE)
    assert events_of(job, "started")[0]["data"]["threads"] == str(max(1, machine_cores() // slots))


def test_a_workers_own_thread_count_is_left_to_its_jobs(alice, worker_factory):
    worker_factory(CPU_SLOTS="2", OMP_NUM_THREADS="3")
    job = wait_status(submit_sleep(alice, steps=1, step_seconds=0.01), Status.DONE)
    assert events_of(job, "started")[0]["data"]["threads"] == "3"
