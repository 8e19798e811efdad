"""A real browser (Playwright driving the system's Chromium) against the real
web server and worker: sign up, see the home page, start a job, and watch its
status and progress change without reloading."""

import re
import shutil

import pytest
from django.contrib.auth.models import User

from jobs import services
from jobs.models import Job
from tests.processes import wait_for

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not shutil.which("chromium"), reason="needs Chromium (scripts/test.sh installs it)")


@pytest.fixture
def page(web, monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the test's own
    # database calls are still plain synchronous ones.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"])
        page = browser.new_page(base_url=web.url)
        page.set_default_timeout(30_000)
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # A console error (a refused Content-Security-Policy, a 404) or a
        # request that failed fails the test as well; a live stream cut off
        # by leaving the page (ERR_ABORTED) is no failure.
        page.on("console", lambda message: message.type == "error" and errors.append(message.text))
        page.on("requestfailed", lambda request: "ERR_ABORTED" not in (request.failure or "")
                and errors.append(f"{request.method} {request.url}: {request.failure}"))
        yield page
        browser.close()
        assert not errors, f"errors in the browser: {errors}"


def sign_up(page, username):
    page.goto("/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password1", "a long enough passphrase")
    page.fill("#id_password2", "a long enough passphrase")
    page.click("text=Create account")
    page.wait_for_url("**/")


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
    page.click("text=Queue the check")
    page.wait_for_url("**/jobs/*/")
    page.evaluate("window.notReloaded = true")

    expect(page.locator("#status")).to_have_text("Running", timeout=30_000)
    bar = page.locator("#progress-bar [role=progressbar]")
    expect(bar).not_to_have_attribute("aria-valuenow", "0", timeout=20_000)  # after the torch import
    expect(page.locator("#status")).to_have_text("Done", timeout=30_000)
    expect(bar).to_have_attribute("aria-valuenow", "100")
    expect(page.locator("#result-text")).to_contain_text("GFLOP/s")
    history = page.locator("#history li")
    expect(history).to_have_count(4)
    assert page.evaluate("window.notReloaded") is True

    page.goto("/?tab=checks")
    page.evaluate("window.notReloaded = true")
    row = page.locator("#jobs-table tr", has_text="first check")
    expect(row.locator("td.status")).to_have_text("Done")
    owner = Job.objects.get(name="first check").owner
    services.submit(owner, "devicecheck", "second check", {"seconds": 3, "size": 64}, {"device": "cpu", "count": 1})
    second = page.locator("#jobs-table tr", has_text="second check")
    expect(second.locator("td.status")).to_have_text("Running", timeout=30_000)
    expect(second.locator("td.status")).to_have_text("Done", timeout=30_000)
    assert page.evaluate("window.notReloaded") is True


def test_the_home_page_filters_sorts_collapses_and_acts_on_a_selection(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    owner = User.objects.get(username="ada")
    for name, group in [("beta", "sweep"), ("alpha", "sweep"), ("gamma", "")]:
        services.submit(owner, "sleep", name, {"steps": 1}, {"device": "cpu", "count": 1}, group=group)
    page.goto("/?tab=checks")
    rows = page.locator("#jobs-table tr[data-job]")
    expect(rows).to_have_count(3)

    page.fill("#filter", "gam")
    expect(rows).to_have_count(1)
    page.fill("#filter", "")
    page.click("th[data-sort=name]")
    expect(page.locator("tbody[data-group=sweep] tr[data-job] td:nth-child(2)")).to_have_text(["alpha", "beta"])
    page.click("th[data-sort=name]")
    expect(page.locator("tbody[data-group=sweep] tr[data-job] td:nth-child(2)")).to_have_text(["beta", "alpha"])

    page.click("text=sweep (2)")
    expect(rows).to_have_count(1)
    page.click("text=sweep (2)")
    expect(rows).to_have_count(3)

    page.check("[aria-label='Select alpha']")
    page.check("[aria-label='Select gamma']")
    page.click("#abort-selected")
    expect(page.locator("#bulk-result")).to_have_text("Aborted 2 job(s).")
    expect(page.locator("tr", has_text="alpha").locator("td.status")).to_have_text("Aborted")
    expect(page.locator("tr", has_text="beta").locator("td.status")).to_have_text("Queued · #1 in queue")

    page.on("dialog", lambda dialog: dialog.accept())
    page.check("[aria-label='Select alpha']")
    page.click("#delete-selected")
    expect(page.locator("#bulk-result")).to_have_text("Deleted 1 job(s).")
    expect(rows).to_have_count(2)
    assert set(Job.objects.values_list("name", flat=True)) == {"beta", "gamma"}


def test_a_dataset_from_an_uploaded_archive_shows_its_chart_and_gallery(page, worker, tmp_path):
    from playwright.sync_api import expect

    from tests.datasetfiles import class_folders, tar_of

    class_folders(tmp_path / "src", {"red": 6, "green": 6, "blue": 6})
    archive = tar_of(tmp_path / "src", tmp_path / "colours.tar.gz")
    sign_up(page, "ada")
    page.click("text=New dataset")
    page.fill("#id_name", "colours")
    page.select_option("#id_source", "archive")
    page.set_input_files("#id_archive", str(archive))
    page.fill("#id_width", "16")
    page.fill("#id_height", "16")
    page.set_input_files("#preview-file", str(tmp_path / "src" / "red" / "000.png"))
    expect(page.locator("#preview-image")).to_be_visible()
    page.click("text=Create dataset")
    page.wait_for_url("**/jobs/*/")
    expect(page.locator("#status")).to_have_text("Done", timeout=60_000)
    expect(page.locator("#class-chart .main-svg").first).to_be_visible(timeout=20_000)
    expect(page.locator("#split-counts")).to_contain_text("train")
    expect(page.locator("#mean-image")).to_be_visible()
    page.click("text=Explore the images")
    expect(page.locator("#gallery figure")).to_have_count(12)  # 18 images, 2 of each 6 for validation
    page.select_option("select[name=class]", label="green")
    page.click("text=Show")
    expect(page.locator("#gallery figcaption")).to_have_text(["green"] * 4)


def test_configure_a_model_start_it_and_watch_its_charts_grow(page, worker):
    from playwright.sync_api import expect

    from tests.test_train import SLOW_LENET
    from tests.trainfiles import make_dataset

    sign_up(page, "ada")
    owner = User.objects.get(username="ada")
    dataset = Job.objects.create(kind="dataset", name="bars", owner=owner, status="done")
    make_dataset(dataset.folder / "dataset")

    page.click("text=New model")
    page.select_option("#id_dataset", str(dataset.pk))
    page.fill("#id_name", "slow lenet")
    page.fill("#id_epochs", "4")
    page.fill("#id_lr", "0.1")
    page.select_option("#id_solver", "nesterov")
    page.select_option("#id_lr_policy", "cosine")
    expect(page.locator("#lr-chart .main-svg").first).to_be_visible(timeout=20_000)
    expect(page.locator("#lr-description")).to_contain_text("cosine")

    page.click("#customize")  # LeNet into the layer editor
    expect(page.locator("#id_network_source_layers")).to_be_checked(timeout=20_000)
    expect(page.locator("#id_layers_text")).to_have_value(re.compile("conv"))
    page.check("#id_network_source_python")
    page.fill("#id_python_text", SLOW_LENET)
    page.click("#visualize")
    expect(page.locator("#network-table")).to_contain_text("Conv2d", timeout=30_000)
    expect(page.locator("#network-table")).to_contain_text("428,074")  # LeNet for 4 classes

    page.click("text=Create model")
    page.wait_for_url("**/jobs/*/")
    page.evaluate("window.notReloaded = true")
    expect(page.locator("#status")).to_have_text("Running", timeout=30_000)
    # Polled from here: Playwright's wait_for_function compiles its predicate
    # with eval, which the app's Content-Security-Policy refuses.
    points = "document.getElementById('metrics-chart').data?.[0]?.x?.length ?? 0"
    first = wait_for(lambda: page.evaluate(points), timeout=60, what="the first points of the metrics chart")
    wait_for(lambda: page.evaluate(points) > first, timeout=60, what="the chart to grow while it trains")
    expect(page.locator("#snapshots-table tbody tr").first).to_be_visible(timeout=60_000)
    expect(page.locator("#status")).to_have_text("Done", timeout=90_000)
    expect(page.locator("#training-result")).to_contain_text("top-1")
    expect(page.locator("#snapshots-table tbody tr")).to_have_count(4)
    expect(page.locator("#filters-image")).to_be_visible()
    expect(page.locator("#download-export")).to_be_visible()  # what the run's end brings, live
    assert page.evaluate("window.notReloaded") is True
