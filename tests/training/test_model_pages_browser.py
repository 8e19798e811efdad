"""In a real browser, the pages around a trained model, loaded with data: the
model's page reads at a glance (chart axes, settings, filters), no chart
overlaps a card at common widths, and no page names a path of the server.

One LeNet is trained for the whole module; each test copies it into its own
jobs (training takes half a minute on a busy machine)."""

from __future__ import annotations

import itertools
import re

import pytest
from django.contrib.auth.models import User

from accounts.models import ApiToken
from tests.browser import needs_chromium, sign_up
from tests.evalfiles import copied_model, train_once
from tests.processes import wait_for

pytestmark = needs_chromium

WIDTHS = (1280, 1440, 1920)

# Every chart (a plotly figure) with the card it sits in, and every card's box.
BOXES = """() => {
  const box = (node) => { const r = node.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const shown = (node) => node.offsetParent !== null;
  const cards = [...document.querySelectorAll("section.card")].filter(shown);
  return {
    cards: cards.map((card) => [card.id, box(card)]),
    charts: [...document.querySelectorAll(".js-plotly-plot")].filter(shown).map((chart) =>
      [chart.id, box(chart.querySelector(".main-svg")), cards.indexOf(chart.closest("section.card"))]),
  };
}"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train_once(tmp_path_factory.mktemp("trained"))


@pytest.fixture
def model(page, trained):
    sign_up(page, "ada")
    return copied_model(User.objects.get(username="ada"), trained, group="sweep")


def server_paths_in(page, tmp_path) -> list[str]:
    """The server's paths (everything this test made lives below tmp_path)
    found in what the page shows or carries."""
    text = page.locator("body").inner_text() + page.content()
    return [marker for marker in (str(tmp_path), "dataset.partial", "/uploads/", "/imports") if marker in text]


def plots_drawn(page, ids: list[str]) -> None:
    drawn = "(ids) => ids.every((id) => document.getElementById(id)?._fullLayout !== undefined)"
    wait_for(lambda: page.evaluate(drawn, ids), timeout=30, what=f"the charts {ids} to be drawn")


def test_the_model_page_reads_at_a_glance(page, model, tmp_path):
    from playwright.sync_api import expect

    page.goto(f"/jobs/{model.pk}/")
    plots_drawn(page, ["metrics-chart", "lr-chart"])
    lr = page.evaluate("""() => { const chart = document.getElementById("lr-chart");
      return { range: chart._fullLayout.yaxis.range, values: chart.data[0].y }; }""")
    low, high = lr["range"]
    assert low == 0 and max(lr["values"]) <= high <= 1.2 * max(lr["values"]), lr  # the curve fills the chart
    assert lr["values"][0] > 0.5 * high  # from its first point on (cosine from 0.1)
    ticks = page.evaluate("document.getElementById('metrics-chart')._fullLayout.yaxis2._vals.map((t) => t.text)")
    assert ticks == ["0%", "20%", "40%", "60%", "80%", "100%"]
    names = page.evaluate("document.getElementById('metrics-chart').data.map((t) => t.name)")
    assert "val top-1" in names and "val top-5" not in names  # four classes
    expect(page.locator("#snapshots-table thead")).not_to_contain_text("Top-5")
    expect(page.locator("#training-result")).not_to_contain_text("top-5")

    groups = page.locator("#settings-table th").all_inner_texts()
    assert groups == ["Data", "Network", "Solver", "Learning rate", "Augmentation", "Precision & devices", "Stopping"]
    expect(page.locator("#settings-table")).to_contain_text("bars (#")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click("#copy-settings")
    expect(page.locator("#copy-settings")).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert '"solver": "nesterov"' in copied and "dataset_dir" not in copied
    assert server_paths_in(page, tmp_path) == []


def test_the_home_page_draws_a_models_train_loss_and_links_its_group(page, model):
    from playwright.sync_api import expect

    from jobs.publish import publish

    # The first sends the copied model's own events on, before any page listens.
    publish(model, "progress", {"progress": 1.0, "loss": 1e-3})
    page.goto(f"/jobs/{model.pk}/")
    expect(page.locator("p.muted a", has_text="sweep")).to_have_attribute("href", "/groups/ada/sweep/")
    page.goto("/?tab=models")
    line = page.locator(f"tr[data-job='{model.pk}'] svg.sparkline")
    expect(line).to_have_attribute("aria-label", re.compile(r"^train loss, latest [0-9.e-]+$"))
    expect(line.locator("title")).to_have_text(re.compile(r"^train loss: [0-9.e-]+ \(lowest [0-9.e-]+\)$"))
    expect(page.locator("a.group-link")).to_have_attribute("href", "/groups/ada/sweep/")
    expect(page.locator("a.group-link")).to_have_text("compare curves")
    points = len(line.locator("polyline").get_attribute("points").split())
    publish(model, "progress", {"progress": 1.0, "loss": 1e-6})
    expect(line).to_have_attribute("aria-label", "train loss, latest 0.000001000")
    assert len(line.locator("polyline").get_attribute("points").split()) == points + 1


def test_each_throughput_says_what_it_measures(page, model):
    from playwright.sync_api import expect

    page.goto(f"/jobs/{model.pk}/")
    result, perf = page.locator("#training-result-list"), page.locator("#perf-list")
    expect(result).to_contain_text("Images/s, whole run")
    expect(result).to_contain_text("training steps after the warm-up, averaged over the run")
    expect(perf).to_contain_text("Images/s, latest")
    expect(perf).to_contain_text("training steps since the report before")


def test_the_first_layers_filters_enlarge_and_scale_each_on_its_own_or_together(page, model):
    from playwright.sync_api import expect

    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"/jobs/{model.pk}/")
    image = page.locator("#filters-image")
    expect(image).to_be_visible()
    wait_for(lambda: image.evaluate("(img) => img.complete && img.naturalWidth > 0"), timeout=10,
             what="the filters to load")
    width = image.bounding_box()["width"]
    natural = image.evaluate("(img) => img.naturalWidth")
    assert width >= 240 and width >= natural  # 20 filters of 5×5 weights, each weight a block of pixels

    own = image.get_attribute("src")
    own_pixels = image.evaluate(PIXELS)
    page.select_option("#filters-scale", "together")
    expect(image).not_to_have_attribute("src", own)
    wait_for(lambda: image.evaluate("(img) => img.complete && img.naturalWidth > 0"), timeout=10,
             what="the filters scaled together to load")
    assert image.evaluate(PIXELS) != own_pixels  # what the picture shows changed, not only its address

    image.click()
    large = page.locator("#filters-large")
    expect(page.locator("#filters-dialog")).to_be_visible()
    assert large.get_attribute("src") == image.get_attribute("src")
    assert large.bounding_box()["width"] > 2 * width
    page.click("#filters-close")
    expect(page.locator("#filters-dialog")).to_be_hidden()


# The picture's pixels as drawn, for comparing two pictures of the same size.
PIXELS = """(img) => {
  const canvas = document.createElement("canvas");
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const context = canvas.getContext("2d");
  context.drawImage(img, 0, 0);
  return Array.from(context.getImageData(0, 0, canvas.width, canvas.height).data.filter((_, i) => i % 4 === 0));
}"""


def overlaps(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1


def inside(inner: list[float], outer: list[float]) -> bool:
    return outer[0] - 1 <= inner[0] and inner[2] <= outer[2] + 1 and outer[1] - 1 <= inner[1] and inner[3] <= outer[3] + 1


def test_no_chart_overlaps_a_card_at_common_widths(page, model):
    pages = {f"/jobs/{model.pk}/": ["metrics-chart", "lr-chart", "norms-chart"],
             f"/groups/{model.owner.username}/sweep/": ["group-loss-chart", "group-headline-chart"]}
    for (url, charts), width in itertools.product(pages.items(), WIDTHS):
        page.set_viewport_size({"width": width, "height": 1000})
        page.goto(url)
        plots_drawn(page, charts)
        found = page.evaluate(BOXES)
        cards = found["cards"]
        for chart, box, holder in found["charts"]:
            assert holder >= 0, f"{chart} is in no card at {width}px on {url}"
            assert inside(box, cards[holder][1]), f"{chart} spills out of #{cards[holder][0]} at {width}px on {url}"
            for index, (card, card_box) in enumerate(cards):
                if index != holder and not inside(card_box, cards[holder][1]) and not inside(cards[holder][1], card_box):
                    assert not overlaps(box, card_box), f"{chart} overlaps #{card} at {width}px on {url}"
        for i, (a, a_box) in enumerate(cards):
            for b, b_box in cards[i + 1:]:
                nested = inside(a_box, b_box) or inside(b_box, a_box)
                assert nested or not overlaps(a_box, b_box), f"#{a} overlaps #{b} at {width}px on {url}"


def test_no_page_around_a_model_names_a_path_of_the_server(page, model, worker, tmp_path):
    from playwright.sync_api import expect

    ApiToken.issue(model.owner, "laptop")
    pages = {
        "/": "#jobs-table", "/?tab=datasets": "#jobs-table", f"/jobs/{model.params['dataset']}/": "#class-chart",
        f"/datasets/{model.params['dataset']}/explore": "#gallery figure", "/datasets/new/": "#new-dataset",
        f"/models/new/?dataset={model.params['dataset']}": "#lr-chart .main-svg",
        f"/groups/{model.owner.username}/sweep/": "#group-table td",
        "/resources/": "#workers :text('GiB free for data')", "/account/": "text=laptop", "/api/": "td:has-text('/api/datasets')",
    }
    for address, shown in pages.items():
        page.goto(address)
        expect(page.locator(shown).first).to_be_visible()
        assert server_paths_in(page, tmp_path) == [], address
