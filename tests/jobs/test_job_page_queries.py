"""The job page's database work does not grow with the job's history: its
transitions are read once, however many parts of the page use them."""

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from jobs.models import Status
from tests.jobtools import submit_sleep


def transition_reads(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return sum(1 for query in queries.captured_queries if 'FROM "jobs_jobtransition"' in query["sql"])


def test_the_job_page_reads_a_jobs_transitions_once(alice):
    job = submit_sleep(alice)
    for _ in range(3):  # three attempts: requeued twice
        job.transition(Status.WAITING, frm=[Status.QUEUED], message="Claimed")
        job.transition(Status.RUNNING, frm=[Status.WAITING], message="Running")
        job.transition(Status.QUEUED, frm=[Status.RUNNING], message="Worker lost")
    browser = Client()
    browser.force_login(alice)
    page = browser.get(f"/jobs/{job.pk}/")
    assert page.content.decode().count("Attempt") >= 3
    assert transition_reads(browser, f"/jobs/{job.pk}/") == 1
