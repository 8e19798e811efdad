"""A real browser on Classify one: from a model's page, pick one of its
dataset's images, classify it with visualizations and see the top-5 chart,
the layer panels and the saliency overlay; then upload an image."""

import re

from django.contrib.auth.models import User

from tests.browser import held_until_enabled, needs_chromium, sign_up
from tests.evalfiles import trained_model
from tests.inferfiles import bar_images
from tests.modelservers import model_server  # noqa: F401  (the fixture)

pytestmark = needs_chromium


def test_classify_an_image_and_see_the_top_5_a_layer_and_where_the_network_looked(page, model_server):  # noqa: F811
    from playwright.sync_api import expect

    sign_up(page, "ada")
    model = trained_model(User.objects.get(username="ada"), epochs=1)
    page.goto(f"/jobs/{model.pk}/")
    held_until_enabled(page, "inference/classify.js", "#classify-one", "#classify-button")
    page.click("#classify-gallery .pick >> nth=1")
    page.check("#classify-visualize")
    page.click("#classify-button")

    expect(page.locator("#classify-chart .barlayer .point")).to_have_count(4, timeout=60_000)
    assert page.evaluate("document.getElementById('classify-seen').naturalWidth") == 28
    expect(page.locator("#layers-total")).to_have_text("8 layers · 428,074 parameters")
    panels = page.locator("#layer-panels details")
    expect(panels).to_have_count(8)
    panels.first.locator("summary").click()
    expect(panels.first.locator("img")).to_have_count(2)  # activations and filters
    expect(panels.first.locator(".chart .barlayer")).to_have_count(2)  # their histograms
    expect(page.locator("#saliency-caption")).to_contain_text("Where the network looked for")
    assert page.evaluate("document.getElementById('saliency-image').naturalWidth") == 28

    page.select_option("#saliency-class", "2")
    expect(page.locator("#saliency-caption")).to_have_text(
        "Where the network looked for diagonal, computed at conv3 (8×8, upsampled to the input): red most, blue least.")
    expect(page.locator("#saliency-layer option")).to_have_text(["conv1 (24×24)", "conv3 (8×8)"])
    page.select_option("#saliency-layer", "conv1")
    expect(page.locator("#saliency-caption")).to_have_text(
        "Where the network looked for diagonal, computed at conv1 (24×24, upsampled to the input): red most, blue least.")

    page.evaluate("document.getElementById('classify-seen').removeAttribute('src')")
    image = bar_images(1, seed=9)[0][0]
    page.set_input_files("#classify-image", files=[{"name": "bar.png", "mimeType": "image/png", "buffer": image}])
    page.uncheck("#classify-visualize")
    page.click("#classify-button")
    expect(page.locator("#classify-seen")).to_have_attribute("src", re.compile("^data:image/png;base64,"))
    expect(page.locator("#classify-layers")).to_be_hidden()
    expect(page.locator("#classify-gallery .pick[aria-pressed=true]")).to_have_count(0)
