"""In a real browser: the Resources page shows the queue in the order jobs
get devices with why each waits, and lets staff reorder it and set a
user's limit; a waiting job's page shows its place and sets its priority."""

from datetime import timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from jobs.models import DeviceLimit, Job, Priority, Status
from tests.browser import needs_chromium, sign_up

pytestmark = needs_chromium


def queued(owner: User, name: str, minute: int) -> Job:
    return Job.objects.create(kind="sleep", name=name, owner=owner, params={"steps": 1},
                              resources={"device": "cpu", "count": 1},
                              queued_at=timezone.now() - timedelta(minutes=60 - minute))


def test_staff_reorder_the_queue_and_set_a_limit_on_the_resources_page(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")  # the first account: staff
    bob = User.objects.create_user("bob", password="correct horse battery")
    ada = User.objects.get(username="ada")
    queued(ada, "ada-0", 0)
    queued(ada, "ada-1", 1)
    bobs = queued(bob, "bob-0", 2)
    page.goto("/resources/")
    rows = page.locator("#queue-table tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("ada-0")
    expect(rows.nth(1)).to_contain_text("bob-0")
    expect(rows.nth(1).locator(".reason")).to_have_text("Behind one of ada's jobs.")
    expect(rows.nth(0).locator(".reason")).to_have_text("Next in line; no worker is running: it starts when one does.")

    rows.nth(1).get_by_role("button", name="Move to front").click()
    expect(page.locator(".flash").first).to_contain_text("“bob-0”: moved to the front.")
    expect(page.locator("#queue-table tbody tr").nth(0)).to_contain_text("bob-0")
    expect(page.locator("#queue-table tbody tr").nth(0).locator(".priority")).to_have_text("normal, moved to the front")

    expect(page.locator("#queue-table tbody tr").nth(2)).to_contain_text("ada-1")
    page.get_by_label("Priority of ada-1").select_option("high")
    # A live snapshot re-renders the rows (one more job waits now): the choice not yet set stays.
    queued(bob, "bob-1", 3)
    expect(rows).to_have_count(4)
    expect(page.get_by_label("Priority of ada-1")).to_have_value("high")
    page.locator("#queue-table tbody tr", has_text="ada-1").get_by_role("button", name="Set").click()
    expect(page.locator(".flash").first).to_contain_text("“ada-1”: priority high.")
    assert Job.objects.get(name="ada-1").priority == Priority.HIGH
    expect(page.locator("#queue-table tbody tr").nth(1)).to_contain_text("ada-1")

    page.fill("#limit-form input[name=username]", "bob")
    page.fill("#limit-form input[name=limit]", "2")
    page.click("#limit-form button")
    expect(page.locator(".flash").first).to_contain_text("bob may now hold 2 devices of a kind at once.")
    expect(page.locator("#users-table tbody")).to_contain_text("bob")
    assert DeviceLimit.of(bob.pk) == 2

    page.goto(f"/jobs/{bobs.pk}/")
    expect(page.locator("#queue")).to_have_text("#1 in the queue for a CPU device")
    expect(page.locator("#priority")).to_have_text("normal")
    page.select_option("#priority-choice", "low")
    page.click("#set-priority")
    expect(page.locator(".flash").first).to_contain_text("“bob-0”: priority low.")
    expect(page.locator("#priority")).to_have_text("low")
    assert Job.objects.get(pk=bobs.pk).status == Status.QUEUED
