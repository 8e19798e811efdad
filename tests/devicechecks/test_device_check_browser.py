"""In a real browser: sign up, start a device check, and watch its status and
progress change without reloading."""



from jobs import services
from jobs.models import Job
from tests.browser import needs_chromium, record_statuses, sign_up, statuses_seen

pytestmark = needs_chromium


def test_sign_up_start_a_job_and_watch_it_live(page, worker):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    expect(page.get_by_text("You are the first user, so you are the administrator.")).to_be_visible()
    expect(page.get_by_role("tab", name="Checks")).to_be_visible()
    expect(page.locator("#device-counter")).to_contain_text("free")

    page.click("text=New device check")
    page.fill("#id_name", "first check")
    page.fill("#id_seconds", "4")
    page.fill("#id_size", "64")
    record_statuses(page)
    page.click("text=Queue the check")
    page.wait_for_url("**/jobs/*/")
    page.evaluate("window.notReloaded = true")

    bar = page.locator("#progress-bar [role=progressbar]")
    expect(bar).not_to_have_attribute("aria-valuenow", "0", timeout=60_000)  # after the torch import
    expect(page.locator("#status")).to_have_text("Done", timeout=60_000)
    history = page.locator("#history li").all_inner_texts()  # Done's item came with its badge, in one handler
    # The history tells a status event that never came from a badge change the recorder missed.
    assert statuses_seen(page)[-2:] == ["Running", "Done"], (statuses_seen(page), history)
    expect(bar).to_have_attribute("aria-valuenow", "100")
    expect(page.locator("#result-text")).to_contain_text("GFLOP/s")
    assert len(history) == 4, (history, statuses_seen(page))
    assert page.evaluate("window.notReloaded") is True

    page.goto("/?tab=checks")
    page.evaluate("window.notReloaded = true")
    row = page.locator("#jobs-table tr", has_text="first check")
    expect(row.locator("td.status")).to_have_text("Done")
    owner = Job.objects.get(name="first check").owner
    services.submit(owner, "devicecheck", "second check", {"seconds": 3, "size": 64}, {"device": "cpu", "count": 1})
    second = page.locator("#jobs-table tr", has_text="second check")
    expect(second.locator("td.status")).to_have_text("Done", timeout=60_000)
    assert "Running" in statuses_seen(page, "second check"), statuses_seen(page, "second check")
    assert page.evaluate("window.notReloaded") is True
