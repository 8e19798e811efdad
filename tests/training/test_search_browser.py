"""In a real browser: a search's page shows its best trial, its charts, the
trials with the one stopped early at its rung, and continues the search;
the New model page offers the search beside the sweep."""

from django.contrib.auth.models import User

from jobs.models import Job, Status
from tests.browser import needs_chromium, sign_up
from tests.training.test_searches import start_search, trials_of, validated
from training import searches

pytestmark = needs_chromium


def test_a_searchs_page_shows_its_trials_best_and_charts_and_continues_it(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    ada = User.objects.get(username="ada")
    search = start_search(ada)
    first, second, third, weak, failing = trials_of(search)
    for trial, values in ((first, [0.5, 0.6]), (second, [0.6, 0.7]), (third, [0.7, 0.9])):
        validated(trial.job, values, Status.DONE)
    validated(weak.job, [0.1])
    Job.objects.filter(pk=failing.job.pk).update(status=Status.FAILED, error="Out of memory.")
    searches.advance(search)

    page.goto(f"/searches/{search.pk}/")
    expect(page.locator("#search-best")).to_contain_text(f"Trial #{third.number}: validation top-1 90.00%")
    rows = page.locator("#search-table tbody tr")
    expect(rows).to_have_count(5)
    expect(rows.nth(3)).to_contain_text("Stopped early at epoch 1")
    expect(rows.nth(4)).to_contain_text("Its job ended failed: Out of memory.")
    expect(page.locator("#search-progress")).to_contain_text("5 of 5 trials made, 0 running, 3 complete, 1 stopped early")
    for chart in ("#search-history-chart", "#search-curves-chart"):
        expect(page.locator(f"{chart}.js-plotly-plot")).to_be_attached()
    expect(page.locator("#search-compare")).to_have_attribute("href", "/compare/?group=ada/lr search")

    page.fill("#search-more input[name=trials]", "2")
    page.click("#search-more button")
    expect(page.locator(".flash").first).to_contain_text("continues with 2 more trial(s)")
    expect(page.locator("#search-table tbody tr")).to_have_count(7)
    expect(page.locator("#search-progress")).to_contain_text("7 of 7 trials made, 2 running")

    page.goto("/models/new/")
    page.check("#id_search")
    expect(page.locator("#id_search_pruner")).to_have_value("asha")
    expect(page.locator("#id_search_sampler")).to_have_value("tpe")


def test_the_new_model_page_offers_a_search_the_augmentation_its_task_takes(page):
    """A detector takes a horizontal flip and no other augmentation: with a
    detection dataset chosen, the search's other augmentation choices are
    hidden, and its flips and networks are the task's; a classification
    dataset offers them all."""
    from playwright.sync_api import expect

    from tests.detectionfiles import make_detection_dataset
    from tests.trainfiles import make_dataset
    from trainer import jobfiles

    sign_up(page, "ada")
    ada = User.objects.get(username="ada")
    boxes = Job.objects.create(kind="dataset", name="boxes", owner=ada, status=Status.DONE)
    make_detection_dataset(boxes.folder / jobfiles.DATASET)
    bars = Job.objects.create(kind="dataset", name="bars", owner=ada, status=Status.DONE)
    make_dataset(bars.folder / jobfiles.DATASET)
    page.goto("/models/new/")
    # First: the default batch of 64 is more than the detection dataset's
    # training images, which the learning rate preview rightly refuses (a 400).
    page.fill("#id_batch_size", "2")
    page.check("#id_search")
    page.fill("#id_search_rotations", "0, 10")
    rows = {name: page.locator(f'p[data-field="{name}"]') for name in
            ("search_translates", "search_rotations", "search_scales", "search_color_jitters", "search_flips")}

    page.select_option("#id_dataset", str(boxes.pk))
    for name in ("search_translates", "search_rotations", "search_scales", "search_color_jitters"):
        expect(rows[name]).to_be_hidden()
    expect(page.locator("#id_search_rotations")).to_have_value("")
    expect(rows["search_flips"]).to_be_visible()
    expect(page.locator('#id_search_flips option[value="vertical"]')).to_be_disabled()
    expect(page.locator('#id_search_flips option[value="horizontal"]')).to_be_enabled()
    expect(page.locator('#id_search_networks option[value="lenet"]')).to_be_disabled()

    page.select_option("#id_dataset", str(bars.pk))
    for row in rows.values():
        expect(row).to_be_visible()
    expect(page.locator('#id_search_flips option[value="vertical"]')).to_be_enabled()
    expect(page.locator('#id_search_networks option[value="lenet"]')).to_be_enabled()
