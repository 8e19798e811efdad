"""In a real browser against the real (ASGI) server: a detection dataset's
gallery draws each image's boxes over it, and unticking a class hides that
class's boxes on every image; its COCO zip streams from the writer's thread."""

import io
import zipfile

from django.contrib.auth.models import User

from datasets import services
from jobs.models import Job, Status
from tests.browser import needs_chromium, sign_up
from tests.detectionfiles import make_detection_dataset

pytestmark = needs_chromium


def test_the_gallery_draws_the_boxes_and_a_class_toggle_hides_them(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    job = Job.objects.create(kind="dataset", name="boxes", owner=User.objects.get(username="ada"), status=Status.DONE,
                             progress=1.0)
    make_detection_dataset(services.folder(job))
    page.goto(f"/datasets/{job.pk}/explore?split=train")
    cars = page.locator('.boxes-overlay g.box[data-class="0"]')
    people = page.locator('.boxes-overlay g.box[data-class="1"]')
    expect(cars).to_have_count(2)
    expect(people).to_have_count(2)
    expect(page.locator(".boxes-overlay g.ignore")).to_have_count(1)
    expect(page.locator('.boxes-overlay g.box[data-class="1"] rect[stroke-dasharray]')).to_have_count(1)
    expect(people.first).to_be_visible()
    box = page.locator('.boxed[data-index="0"]').bounding_box()
    assert box["width"] > 100, "the image is shown enlarged, its boxes with it"

    page.locator('#class-toggles input[data-class="1"]').uncheck()
    for n in range(2):
        expect(people.nth(n)).to_be_hidden()
        expect(cars.nth(n)).to_be_visible()
    page.locator('#class-toggles input[data-class="1"]').check()
    expect(people.first).to_be_visible()


def test_the_coco_download_streams_through_the_asgi_server(page):
    sign_up(page, "ada")
    job = Job.objects.create(kind="dataset", name="boxes", owner=User.objects.get(username="ada"), status=Status.DONE,
                             progress=1.0)
    make_detection_dataset(services.folder(job))
    answer = page.request.get(f"/datasets/{job.pk}/coco.zip")
    assert answer.status == 200 and answer.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(answer.body())) as archive:
        names = archive.namelist()
    assert sorted(n for n in names if n.startswith("annotations/")) == [
        "annotations/instances_train.json", "annotations/instances_val.json"]
    assert len([n for n in names if n.startswith("images/")]) == 6
