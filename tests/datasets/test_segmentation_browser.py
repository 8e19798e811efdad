"""In a real browser against the real (ASGI) server: a segmentation
dataset's gallery colours each image's mask over it, pixel for pixel; the
opacity slider and the class toggles redraw every mask."""

import numpy as np
from django.contrib.auth.models import User

from datasets import services
from jobs.models import Job, Status
from tests.browser import needs_chromium, sign_up
from tests.segmentationfiles import BUILD_CONFIG, make_segmentation_dataset

pytestmark = needs_chromium

# The RGBA of each pixel of the first image's mask canvas, as drawn.
READ_CANVAS = """() => {
  const canvas = document.querySelector('.masked[data-index="0"] canvas');
  return Array.from(canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data);
}"""


def test_the_gallery_draws_each_mask_in_its_classes_colours_and_the_controls_redraw_it(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    job = Job.objects.create(kind="dataset", name="scenes", owner=User.objects.get(username="ada"), status=Status.DONE,
                             progress=1.0, params={**BUILD_CONFIG, "source": {"type": "folder", "path": "/srv"}})
    make_segmentation_dataset(services.folder(job))
    mask = np.asarray(services.reader(job, "train", services.manifest(job)).targets[0])
    page.goto(f"/datasets/{job.pk}/explore?split=train")
    expect(page.locator("#gallery")).to_have_attribute("data-masks-drawn", "true")
    assert page.locator('.masked[data-index="0"]').bounding_box()["width"] > 100, "shown enlarged"

    def drawn() -> np.ndarray:
        return np.array(page.evaluate(READ_CANVAS), dtype=np.uint8).reshape(*mask.shape, 4)

    rgba = drawn()
    assert (rgba[mask != 255][:, 3] == 128).all() and (rgba[mask == 255][:, 3] == 0).all()  # ignored: not shown

    page.locator("#mask-opacity").fill("100")
    rgba = drawn()  # opaque, so the colours read back exactly (the canvas stores them premultiplied)
    assert (rgba[mask != 255][:, 3] == 255).all()
    assert (rgba[mask == 1][:, :3] == (128, 0, 0)).all() and (rgba[mask == 2][:, :3] == (0, 128, 0)).all()
    page.locator('#mask-controls input[data-class="1"]').uncheck()
    rgba = drawn()
    assert (rgba[mask == 1][:, 3] == 0).all() and (rgba[mask == 2][:, 3] == 255).all()
    page.locator('#mask-controls input[data-class="ignored"]').check()
    rgba = drawn()
    assert (rgba[mask == 255][:, :3] == 255).all() and (rgba[mask == 255][:, 3] == 255).all()


def test_the_dataset_page_charts_the_pixel_shares_and_the_new_page_points_at_the_chosen_layout(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    job = Job.objects.create(kind="dataset", name="scenes", owner=User.objects.get(username="ada"), status=Status.DONE,
                             progress=1.0, params={**BUILD_CONFIG, "source": {"type": "folder", "path": "/srv"}})
    make_segmentation_dataset(services.folder(job))
    page.goto(f"/jobs/{job.pk}/")
    expect(page.locator("#share-chart .main-svg").first).to_be_attached()
    expect(page.locator("#class-chart .main-svg").first).to_be_attached()
    expect(page.locator("#class-pixels tbody tr")).to_have_count(3)

    page.goto("/datasets/new/?task=segmentation")
    expect(page.locator("#layouts dt.chosen")).to_have_text("Auto-detect")
    page.select_option("#id_layout", "voc")
    expect(page.locator("#layouts dt.chosen")).to_have_text("Pascal VOC")
