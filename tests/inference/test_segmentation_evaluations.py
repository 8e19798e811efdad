"""Evaluate for a segmenter, through the web and a real worker: a U-Net
trained a few seconds on the scenes, evaluated on its validation split (its
report, rows, downloads and images as the API and the page give them, and a
real browser drawing its figures, its confusion matrix and the worst images'
error maps), on new images with their label images (a server folder over
the API, an uploaded archive on the New evaluation page, the files left
out listed in the browser; a text list refused), and Compare of a group."""

from __future__ import annotations

import base64
import csv
import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from PIL import Image

from inference.evaluate.services import evaluate, submit
from jobs.models import Job, Status
from tests.browser import needs_chromium, sign_up
from tests.clients import signed_in
from tests.evalfiles import evaluated_over_api, imports
from tests.jobtools import wait_status
from tests.processes import wait_for
from tests.segmentationfiles import CLASSES, copied_segmenter, png, train_segmenter_once
from trainer.evaluation_files import OUTPUT, REPORT
from trainer.segmentation.labels import IGNORE

TIMEOUT = 180
VAL_IMAGES = 8  # a quarter of the 32 scenes
SCENES = 32
# The one bad pair the new images hold: a label image of another size than its image's.
SMALL = {"file": "images/small.png", "line": None, "reason": "label image labels/small.png is 10×10, its image 64×48"}
# The error map's colours (masks_report.js): right, wrong, ignored.
ERRORS = np.array([[46, 160, 67], [211, 47, 47], [158, 158, 158]], dtype=np.uint8)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return train_segmenter_once(tmp_path_factory.mktemp("segmenter"), count=32, epochs=4)


def mask(png: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(png))))


def evaluated(owner: User, trained: Path) -> tuple[Job, dict]:
    job = wait_status(evaluate(owner, copied_segmenter(owner, trained), "val"), Status.DONE, Status.FAILED,
                      timeout=TIMEOUT)
    assert job.status == Status.DONE, job.error
    return job, json.loads((job.folder / OUTPUT / REPORT).read_text())


@pytest.mark.one_database
def test_a_segmenter_evaluated_on_its_validation_split(alice, worker, trained):
    model = copied_segmenter(alice, trained)
    client = signed_in(alice)
    page = client.get(reverse("job", args=[model.pk])).content.decode()
    assert 'id="evaluate"' in page and 'id="classify-many"' in page and ">Segment many</a>" in page
    job, report = evaluated_over_api(client, model, timeout=TIMEOUT)
    assert report["layout"] == "masks" and report["count"] == VAL_IMAGES and report["image_size"] == [24, 32]
    assert [row["class"] for row in report["per_class"]] == list(CLASSES)
    confusion = np.array(report["confusion"])
    assert confusion.shape == (len(CLASSES), len(CLASSES)) and confusion.sum() == report["pixels"]
    assert report["pixels"] + report["ignored"] == VAL_IMAGES * 24 * 32 and report["ignored"] > 0, "the border"
    assert report["pixel_accuracy"] == pytest.approx(np.trace(confusion) / confusion.sum())
    assert 0 < report["miou"] <= 1 and len(report["worst"]) == report["worst_total"] == VAL_IMAGES
    summary = client.get(f"/api/jobs/{job.pk}").json()
    assert (summary["miou"], summary["pixel_accuracy"]) == (report["miou"], report["pixel_accuracy"])
    worst = report["worst"][0]
    assert mask(worst["truth"]).shape == (24, 32) and (mask(worst["truth"]) == IGNORE).any()
    rows = client.get(f"/api/evaluations/{job.pk}/rows")
    assert rows.status_code == 400 and "download them" in json.dumps(rows.json()["errors"]["rows"])

    downloads = {what: b"".join(client.get(f"/evaluations/{job.pk}/download/{what}").streaming_content)
                 for what in ("json", "csv")}
    images = json.loads(downloads["json"])["rows"]
    header, *table = list(csv.reader(io.StringIO(downloads["csv"].decode())))
    assert len(images) == len(table) == VAL_IMAGES and header[2] == "miou"
    assert sum(row["labelled"] for row in images) == report["pixels"]
    image = client.get(f"/evaluations/{job.pk}/images/{worst['index']}.png")
    assert image["Content-Type"] == "image/png" and image.content.startswith(b"\x89PNG")
    assert str(model.folder) not in json.dumps(report)


def new_images(trained: Path, name: str) -> Path:
    """The scenes' source (``images/`` and ``labels/``, 64×48) and one bad pair, in a folder the server may read."""
    folder = imports() / name
    shutil.copytree(trained / "source", folder)
    shutil.copy(folder / "images" / "scene000.png", folder / "images" / "small.png")
    (folder / "labels" / "small.png").write_bytes(png(np.zeros((10, 10), dtype=np.uint8)))
    return folder


def zipped(folder: Path) -> io.BytesIO:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for path in sorted(folder.rglob("*.png")):
            archive.write(path, f"scenes/{path.relative_to(folder)}")
    data.seek(0)
    data.name = "scenes.zip"
    return data


@pytest.mark.one_database
def test_a_segmenter_on_new_images_from_a_server_folder_and_an_uploaded_archive(alice, worker, trained):
    model = copied_segmenter(alice, trained)
    client = signed_in(alice)
    folder = new_images(trained, "new-scenes")
    response = client.post("/api/evaluations", data=json.dumps({"model": model.pk, "source": "folder",
                                                                "folder": str(folder)}),
                           content_type="application/json")
    assert response.status_code == 201, response.content
    folder_job = Job.objects.get(pk=response.json()["id"])
    page = client.post(reverse("new-evaluation"), {"model": model.pk, "source": "archive", "archive": zipped(folder),
                                                   "top_n": 5})
    assert page.status_code == 302, page.content.decode()[-3000:]
    archive_job = Job.objects.get(pk=page["Location"].rstrip("/").rsplit("/", 1)[-1])
    reports = []
    for job in (folder_job, archive_job):
        job = wait_status(job, Status.DONE, Status.FAILED, timeout=TIMEOUT)
        assert job.status == Status.DONE, job.error
        report = client.get(f"/api/evaluations/{job.pk}/report").json()["report"]
        assert report["layout"] == "masks" and report["count"] == SCENES and report["skipped"] == [SMALL]
        assert report["pixels"] + report["ignored"] == SCENES * 24 * 32, "placed at the dataset's 32×24"
        assert str(imports()) not in json.dumps(report) and str(trained) not in json.dumps(report)
        image = client.get(f"/evaluations/{job.pk}/images/{report['worst'][0]['index']}.png")
        assert image["Content-Type"] == "image/png" and image.content.startswith(b"\x89PNG")
        assert client.get(f"/api/jobs/{job.pk}").json()["miou"] == report["miou"]
        reports.append(report)
    assert reports[0]["confusion"] == reports[1]["confusion"], "the folder and its archive score alike"

    response = client.post("/api/evaluations", data=json.dumps({
        "model": model.pk, "source": "list", "list_text": str(folder / "images" / "scene000.png")}),
        content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["source"][0]["message"].startswith(
        "Semantic segmentation models are not evaluated on a text list: they take a split of their dataset, a folder "
        "on the server or an uploaded archive of images with their label images")
    assert Job.objects.filter(kind="evaluation").count() == 2


def canvas_pixels(page, number: int) -> np.ndarray:
    """The ``number``th worst image's canvas, H×W×4."""
    width, height, pixels = page.evaluate("""(number) => {
        const canvas = document.querySelectorAll('#worst-masks-gallery canvas')[number];
        return [canvas.width, canvas.height,
                Array.from(canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data)];
    }""", number)
    return np.array(pixels, dtype=np.uint8).reshape(height, width, 4)


@pytest.mark.one_database
@needs_chromium
def test_the_report_page_draws_the_figures_the_matrix_and_each_worst_images_error_map(page, worker, trained):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    job, report = evaluated(User.objects.get(username="ada"), trained)
    page.goto(f"/jobs/{job.pk}/")
    expect(page.locator("#evaluation-summary")).to_contain_text(f"mIoU{report['miou'] * 100:.1f}%")
    rows = page.locator("#masks-per-class-table tbody tr")
    expect(rows).to_have_count(len(CLASSES))
    for number, row in enumerate(report["per_class"]):
        shown = "—" if row["iou"] is None else f"{row['iou'] * 100:.1f}%"
        expect(rows.nth(number).locator("td.iou")).to_have_text(shown)
    expect(page.locator("#pixel-confusion-chart .heatmaplayer")).to_have_count(1)
    expect(page.locator("#worst-masks-gallery")).to_have_attribute("data-drawn", "true", timeout=30_000)
    expect(page.locator("#worst-masks-gallery figure")).to_have_count(len(report["worst"]))
    expect(page.locator("#worst-masks-gallery figure").first).to_contain_text(report["worst"][0]["name"])

    slider = page.locator("#worst-masks-opacity")
    slider.focus()
    page.keyboard.press("End")  # opaque: the canvas holds the colours themselves, not premultiplied ones
    for number in (0, len(report["worst"]) - 1):
        truth, predicted = (mask(report["worst"][number][which]) for which in ("truth", "predicted"))
        codes = np.where(truth == IGNORE, 2, np.where(truth == predicted, 0, 1))
        assert np.array_equal(canvas_pixels(page, number)[..., :3], ERRORS[codes]), f"the error map of #{number}"
    colours = page.evaluate("JSON.parse(document.getElementById('evaluation-data').textContent).colours")
    table = np.array([[int(hex_[at:at + 2], 16) for at in (1, 3, 5)] for hex_ in colours], dtype=np.uint8)
    page.select_option("#worst-masks-view", "predicted")
    predicted = mask(report["worst"][0]["predicted"])
    pixels = canvas_pixels(page, 0)
    assert (pixels[..., 3] == np.where(predicted == IGNORE, 0, 255)).all()
    assert np.array_equal(pixels[..., :3][predicted != IGNORE], table[predicted[predicted != IGNORE]])
    expect(page.locator("#worst-masks-legend")).to_contain_text(CLASSES[0])
    slider.focus()
    page.keyboard.press("Home")
    assert (canvas_pixels(page, 0)[..., 3] == 0).all(), "opacity 0 draws nothing"
    expect(page.locator("#confusion")).to_be_hidden()
    expect(page.locator("#worst-images")).to_be_hidden()


@pytest.mark.one_database
@needs_chromium
def test_the_report_of_new_images_lists_the_files_left_out(page, worker, trained):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    owner = User.objects.get(username="ada")
    folder = new_images(trained, "shown-scenes")
    job = wait_status(submit(owner, copied_segmenter(owner, trained), {"type": "folder", "path": str(folder)}),
                      Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert job.status == Status.DONE, job.error
    page.goto(f"/jobs/{job.pk}/")
    expect(page.locator("#skipped-files")).to_be_visible()
    expect(page.locator("#skipped-count")).to_have_text("1 file(s) or line(s) left out.")
    expect(page.locator("#skipped-table tbody tr td")).to_have_text([SMALL["file"], "", SMALL["reason"]])
    expect(page.locator("#worst-masks-gallery")).to_have_attribute("data-drawn", "true", timeout=30_000)
    expect(page.locator("#worst-masks-gallery figure")).to_have_count(SCENES)


@pytest.mark.one_database
def test_compare_evaluates_a_groups_segmenters_and_shows_their_miou(alice, worker, trained):
    for name in ("first", "second"):
        model = copied_segmenter(alice, trained, name=name)
        model.group = "segmenters"
        model.save(update_fields=["group"])
    client = signed_in(alice)
    page = client.get(reverse("group", args=[alice.username, "segmenters"])).content.decode()
    assert "<th>mIoU</th>" in page and "<th>Top-1</th>" not in page and 'name="score_threshold"' not in page
    response = client.post(reverse("api-compare", args=[alice.username, "segmenters"]),
                           data=json.dumps({"split": "val"}), content_type="application/json")
    assert response.status_code in (200, 201, 202), response.content
    assert len(response.json()["jobs"]) == 2

    def rows() -> list[dict]:
        return client.get(reverse("api-compare", args=[alice.username, "segmenters"])).json()["evaluations"]

    wait_for(lambda: len(rows()) == 2 and all(row["status"] == Status.DONE for row in rows()), timeout=TIMEOUT,
             what="the comparison to finish")
    for row in rows():
        report = json.loads((Job.objects.get(pk=row["id"]).folder / OUTPUT / REPORT).read_text())
        assert (row["miou"], row["pixel_accuracy"], row["dice"]) == (report["miou"], report["pixel_accuracy"],
                                                                     report["dice"])
