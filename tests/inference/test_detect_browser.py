"""A real browser on Detect one: from a detector's job page (which offers
Detect, not Classify), upload an image and see its boxes drawn over it and
listed; the score slider and a class's toggle then show fewer, with no new
request to the model server."""

import math
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tests.browser import held_until_enabled, needs_chromium, sign_up
from tests.detectionfiles import copied_detector, train_detector_once
from tests.inference.test_detect_one import unseen
from tests.modelservers import model_server  # noqa: F401  (the fixture)

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return train_detector_once(tmp_path_factory.mktemp("detector"))


def shown(page) -> tuple[int, int]:
    """The boxes drawn and the rows of the table."""
    return page.locator("#detect-overlay g.box").count(), page.locator("#detect-table tbody tr").count()


def test_detect_then_filter_the_boxes_by_score_and_class_without_asking_again(page, model_server, trained):  # noqa: F811
    from playwright.sync_api import expect

    sign_up(page, "ada")
    model = copied_detector(User.objects.get(username="ada"), trained)
    asked = []
    page.on("request", lambda request: request.method == "POST" and request.url.endswith("/detect")
            and asked.append(request.url))
    page.goto(f"/jobs/{model.pk}/")
    expect(page.locator("#classify-one")).to_have_count(0)
    held_until_enabled(page, "inference/detect.js", "#detect-one", "#detect-button")
    page.set_input_files("#detect-image", files=[{"name": "car.png", "mimeType": "image/png", "buffer": unseen()}])
    page.click("#detect-button")
    expect(page.locator("#detect-result")).to_be_visible(timeout=60_000)
    expect(page.locator("#detect-overlay")).to_have_attribute("viewBox", "0 0 32 32")
    assert page.evaluate("document.getElementById('detect-picture').naturalWidth") == 32

    slider = page.locator("#detect-threshold")
    slider.focus()
    page.keyboard.press("Home")  # the lowest threshold: every box found
    expect(page.locator("#detect-threshold-value")).to_have_text("0.05")
    every = page.locator("#detect-table tbody tr").count()
    assert every > 1 and shown(page) == (every, every)
    expect(page.locator("#detect-count")).to_contain_text(f"{every} of {every} boxes shown")
    scores = [float(text) for text in page.locator("#detect-table tbody tr td:nth-child(2)").all_inner_texts()]
    assert len(set(scores)) > 1, scores

    # To the slider's last step at or below the highest score: above the lowest (detectors often give two
    # boxes one score, so a median may be the highest too), and some boxes hidden.
    steps = math.floor((max(scores) - 0.05) / 0.01 + 1e-9)
    assert 0.05 + 0.01 * steps > min(scores), scores
    for _ in range(steps):
        page.keyboard.press("ArrowRight")
    threshold = float(page.locator("#detect-threshold-value").inner_text())
    above = sum(score >= threshold for score in scores)
    assert 0 < above < every, (threshold, scores)
    expect(page.locator("#detect-table tbody tr")).to_have_count(above)
    assert shown(page) == (above, above)

    page.keyboard.press("Home")
    first = page.locator("#detect-table tbody tr").first.get_attribute("data-class")
    of_first = page.locator(f"#detect-table tbody tr[data-class='{first}']").count()
    page.uncheck(f"#detect-classes input[data-class='{first}']")
    expect(page.locator("#detect-table tbody tr")).to_have_count(every - of_first)
    assert page.locator(f"#detect-overlay g.box[data-class='{first}']").count() == 0
    page.check(f"#detect-classes input[data-class='{first}']")
    expect(page.locator("#detect-table tbody tr")).to_have_count(every)
    assert len(asked) == 1, "the slider and the toggles redraw the one answer"
