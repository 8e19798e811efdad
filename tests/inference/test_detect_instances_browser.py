"""A real browser on Detect one with an instance segmentation model: from
its job page (which offers Detect), upload an image and see each object's
mask filled and outlined in its class's colour under its box; the score
slider and the class toggles redraw the masks with the boxes, with no new
request to the model server."""

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tests.browser import held_until_enabled, needs_chromium, sign_up
from tests.instancefiles import copied_instances, one_shape, train_instances_once
from tests.modelservers import model_server  # noqa: F401  (the fixture)
from tests.segmentationfiles import png

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return train_instances_once(tmp_path_factory.mktemp("instances"))


def masks_drawn(page) -> int:
    """The objects the canvas holds (its ``data-objects``), once redrawn."""
    return int(page.locator("#detect-masks").get_attribute("data-objects"))


def coloured_pixels(page) -> int:
    return page.evaluate("""() => {
      const canvas = document.getElementById('detect-masks');
      const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      let n = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n += 1;
      return n;
    }""")


def test_detect_draws_each_objects_mask_and_the_slider_and_toggles_redraw_them(page, model_server, trained):  # noqa: F811
    from playwright.sync_api import expect

    sign_up(page, "ada")
    model = copied_instances(User.objects.get(username="ada"), trained)
    asked = []
    page.on("request", lambda request: request.method == "POST" and request.url.endswith("/detect")
            and asked.append(request.url))
    page.goto(f"/jobs/{model.pk}/")
    expect(page.locator("#segment-one")).to_have_count(0)
    held_until_enabled(page, "inference/detect.js", "#detect-one", "#detect-button")
    pixels, _ = one_shape(99, (48, 40))
    page.set_input_files("#detect-image", files=[{"name": "shape.png", "mimeType": "image/png", "buffer": png(pixels)}])
    page.click("#detect-button")
    expect(page.locator("#detect-result")).to_be_visible(timeout=60_000)
    expect(page.locator("#detect-pixels-head")).to_be_visible()
    assert page.evaluate("[document.getElementById('detect-masks').width, "
                         "document.getElementById('detect-masks').height]") == [48, 40]

    slider = page.locator("#detect-threshold")
    slider.focus()
    page.keyboard.press("Home")
    every = page.locator("#detect-table tbody tr").count()
    assert every >= 1 and masks_drawn(page) == every
    mask_pixels = [int(text) for text in page.locator("#detect-table tbody tr td:nth-child(7)").all_inner_texts()]
    assert sum(mask_pixels) > 0 and coloured_pixels(page) == sum(mask_pixels)

    page.keyboard.press("End")  # a score of 1: no object shown
    expect(page.locator("#detect-table tbody tr")).to_have_count(0)
    assert masks_drawn(page) == 0 and coloured_pixels(page) == 0

    page.keyboard.press("Home")
    first = page.locator("#detect-table tbody tr").first.get_attribute("data-class")
    page.uncheck(f"#detect-classes input[data-class='{first}']")
    left = page.locator("#detect-table tbody tr").count()
    assert masks_drawn(page) == left and left < every
    page.check(f"#detect-classes input[data-class='{first}']")
    assert masks_drawn(page) == every and len(asked) == 1, "the slider and the toggles redraw the one answer"
