"""Two real workers standing in for two machines (``WORKER_HOST`` alpha and
beta, a CPU slot each unless a test says otherwise): jobs spread over both,
and the resources page shows both with the job each device holds."""

from django.test import Client

from jobs import services
from jobs.models import Job, Status
from tests.browser import needs_chromium, sign_up
from tests.jobtools import history, status_of, submit_sleep, wait_status
from tests.processes import wait_for

LONG = {"steps": 400, "step_seconds": 0.1}


def running_on(job: Job) -> str:
    job.refresh_from_db()
    return job.held.get("host", "") if job.status == Status.RUNNING else ""


def end(*jobs: Job) -> None:
    for job in jobs:
        services.abort(job, job.owner)
    for job in jobs:
        wait_status(job, Status.ABORTED)


def one_running_on_alpha_one_waiting(jobs: tuple[Job, Job]) -> tuple[Job, Job] | None:
    """The job running on alpha and the one waiting there, in that order."""
    for running, waiting in (jobs, jobs[::-1]):
        if running_on(running) == "alpha" and status_of(waiting) == Status.WAITING:
            return running, waiting
    return None


def test_a_job_waiting_on_a_busy_worker_moves_to_a_worker_that_starts_on_another_host(alice, worker_factory):
    worker_factory("alpha", WORKER_HOST="alpha")
    jobs = submit_sleep(alice, name="first", **LONG), submit_sleep(alice, name="second", **LONG)
    # Either may start: a worker takes the two in two threads, and the
    # second's claim can overtake the first's on a busy machine.
    running, waiting = wait_for(lambda: one_running_on_alpha_one_waiting(jobs),
                                what=lambda: f"one job to run on alpha and the other to wait there "
                                             f"(their statuses: {[history(job) for job in jobs]})")

    worker_factory("beta", WORKER_HOST="beta")
    wait_for(lambda: running_on(waiting) == "beta", what=lambda: f"the waiting job to run on beta "
                                                              f"(its statuses: {history(waiting)})")

    assert running_on(running) == "alpha"  # both at once, one on each machine
    assert history(waiting) == ["queued", "waiting", "queued", "waiting", "running"]
    passed_on = waiting.transitions.filter(status=Status.QUEUED).last().message
    assert passed_on == "Passed on by worker alpha: worker beta can run it sooner"
    waiting.refresh_from_db()
    assert waiting.attempt == 1
    end(*jobs)


def two_hosts_each_running_a_job(owner, worker_factory) -> list[Job]:
    worker_factory("alpha", WORKER_HOST="alpha")
    worker_factory("beta", WORKER_HOST="beta")
    jobs = [submit_sleep(owner, name=f"sleeper {i}", **LONG) for i in range(2)]
    wait_for(lambda: {running_on(job) for job in jobs} == {"alpha", "beta"}, what="a job running on each host")
    return jobs


def test_the_resources_api_shows_both_hosts_and_the_job_each_device_holds(alice, worker_factory):
    jobs = two_hosts_each_running_a_job(alice, worker_factory)
    client = Client()
    client.force_login(alice)
    workers = {w["hostname"]: w for w in client.get("/api/resources").json()["workers"]}
    assert sorted(workers) == ["alpha", "beta"]
    for job in jobs:
        (device,) = workers[running_on(job)]["devices"]
        assert device["id"] == "cpu0" and device["job"]["id"] == job.pk and device["job"]["name"] == job.name
    assert client.get("/api/resources").json()["counts"]["cpu"] == {"free": 0, "total": 2}
    end(*jobs)


@needs_chromium
def test_the_resources_page_shows_both_hosts_and_the_job_each_device_holds(alice, worker_factory, page):
    jobs = two_hosts_each_running_a_job(alice, worker_factory)
    sign_up(page, "ada")
    page.goto("/resources/")
    for job in jobs:
        card = page.locator("section.worker", has=page.get_by_role("heading", name=running_on(job)))
        card.get_by_role("link", name=f"{job.name} (alice)").wait_for()
    end(*jobs)


def test_a_job_that_needs_more_slots_than_one_host_has_runs_on_the_host_that_has_them(alice, worker_factory):
    worker_factory("alpha", WORKER_HOST="alpha")
    worker_factory("beta", WORKER_HOST="beta", CPU_SLOTS="2")
    jobs = [services.submit(alice, "sleep", f"wide {i}", {"steps": 2, "step_seconds": 0.05},
                            {"device": "cpu", "count": 2}) for i in range(3)]
    for job in jobs:
        job = wait_status(job, Status.DONE, Status.FAILED, timeout=60)
        assert (job.status, job.error, job.held) == (Status.DONE, "", {"host": "beta", "devices": ["cpu0", "cpu1"]})
