"""In a real browser: configure a model, start it, and watch its charts grow."""

import re

from django.contrib.auth.models import User

from jobs.models import Job
from tests.browser import needs_chromium, sign_up
from tests.processes import wait_for

pytestmark = needs_chromium


def test_configure_a_model_start_it_and_watch_its_charts_grow(page, worker):
    from playwright.sync_api import expect

    from tests.trainer.test_train import SLOW_LENET
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
