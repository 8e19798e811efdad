"""In a real browser: a job page's live stream loses no event, however late
the page's own scripts run."""

import time

from django.contrib.auth.models import User

from jobs import services
from jobs.models import Status
from tests.browser import needs_chromium, sign_up
from tests.jobtools import wait_status

pytestmark = needs_chromium


def test_events_that_come_before_the_pages_script_has_run_still_reach_it(page, worker):
    """The stream is opened by the shared script, which runs first; the job
    page's script, which handles the events, may run seconds later on a
    loaded machine (its file is slow to come, here on purpose). What the
    stream brings meanwhile must still reach it: here, the job's end."""
    from playwright.sync_api import expect

    sign_up(page, "ada")
    job = services.submit(User.objects.get(username="ada"), "sleep", "late script", {"steps": 6, "step_seconds": 0.3},
                          {"device": "cpu", "count": 1})
    wait_status(job, Status.RUNNING)

    def late(route):
        time.sleep(4)  # the job runs to its end meanwhile
        route.continue_()

    page.route("**/jobs/job*.js", late)
    page.goto(f"/jobs/{job.pk}/")
    assert wait_status(job, Status.DONE).status == Status.DONE
    expect(page.locator("#status")).to_have_text("Done", timeout=10_000)
    expect(page.locator("#progress-bar [role=progressbar]")).to_have_attribute("aria-valuenow", "100")
