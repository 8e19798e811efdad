"""Evaluate for a detector, through the web and a real worker: a Faster
R-CNN trained one epoch on the rectangles, evaluated on its validation
split (its report, downloads and images as the API and the page give
them, and a real browser on its page), and Compare. New images:
``test_detection_file_evaluations``."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
import torch
from django.contrib.auth.models import User
from django.urls import reverse

from datasets import services as dataset_services
from inference.evaluate.services import evaluate
from jobs.models import Job, Status
from tests.browser import needs_chromium, sign_up
from tests.clients import signed_in
from tests.detectionfiles import built_rectangles, trained_detector
from tests.evalfiles import evaluated_over_api
from tests.jobtools import wait_status
from tests.processes import wait_for
from trainer import jobfiles
from trainer.evaluation_files import OUTPUT, REPORT

TIMEOUT = 180


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A rectangles dataset (``root/build/dataset``) and a detector trained on it (``root/run``), no job rows."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        root = tmp_path_factory.mktemp("detector")
        built_rectangles(root, count=24)
        trained_detector(root / "run", root / "build" / "dataset", epochs=1, val_interval=1.0, snapshot_interval=1.0)
    finally:
        torch.set_num_threads(threads)
    return root


def detector_job(owner, trained: Path) -> Job:
    """A done dataset job and a done detection model holding copies of ``trained``."""
    dataset = Job.objects.create(kind="dataset", name="rectangles", owner=owner, status=Status.DONE, progress=1.0,
                                 params={"task": "detection"})
    shutil.copytree(trained / "build" / "dataset", dataset_services.folder(dataset))
    config = json.loads((trained / "run" / jobfiles.CONFIG).read_text())
    params = {**config, "dataset": dataset.pk, "dataset_dir": str(dataset_services.folder(dataset))}
    del params["job_id"], params["devices"]
    model = Job.objects.create(kind="train", name="detector", owner=owner, status=Status.DONE, params=params,
                               resources={"device": "cpu", "count": 1}, progress=1.0)
    shutil.copytree(trained / "run", model.folder)
    (model.folder / jobfiles.CONFIG).write_text(json.dumps({**params, "job_id": model.pk, "devices": ["cpu0"]}))
    return model


@pytest.mark.one_database
def test_a_detector_evaluated_on_its_validation_split(alice, worker, trained):
    model = detector_job(alice, trained)
    client = signed_in(alice)
    page = client.get(reverse("job", args=[model.pk])).content.decode()
    assert 'id="evaluate"' in page and 'id="classify-many"' in page
    job, report = evaluated_over_api(client, model, timeout=TIMEOUT)
    assert report["layout"] == "boxes" and report["count"] == 6 and report["image_size"] == [32, 32]
    assert list(report["per_class"]) == ["Car", "Cyclist"] and 0 <= report["map"] <= report["map50"] <= 1
    assert client.get(f"/api/jobs/{job.pk}").json()["map50"] == report["map50"]
    rows = client.get(f"/api/evaluations/{job.pk}/rows")
    assert rows.status_code == 400 and "download them" in json.dumps(rows.json()["errors"]["rows"])

    downloads = {what: b"".join(client.get(f"/evaluations/{job.pk}/download/{what}").streaming_content)
                 for what in ("json", "csv")}
    detections = json.loads(downloads["json"])["rows"]
    table = list(csv.reader(io.StringIO(downloads["csv"].decode())))
    assert len(detections) == len(table) - 1 == report["detections"]
    assert all(set(row) == {"index", "name", "class", "score", "box", "matched"} for row in detections)
    image = client.get(f"/evaluations/{job.pk}/images/{(report['worst'] or [{'index': 0}])[0]['index']}.png")
    assert image["Content-Type"] == "image/png" and image.content.startswith(b"\x89PNG")
    section = client.get(reverse("job", args=[job.pk])).content.decode()
    assert 'id="pr-curves"' in section and 'id="worst-images"' in section
    assert str(model.folder) not in json.dumps(report)


@pytest.mark.one_database
@needs_chromium
def test_the_report_page_draws_a_detectors_figures_curves_and_boxes(page, worker, trained):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    owner = User.objects.get(username="ada")
    job = evaluate(owner, detector_job(owner, trained), "val")
    job = wait_status(job, Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert job.status == Status.DONE, job.error
    report = json.loads((job.folder / OUTPUT / REPORT).read_text())

    page.goto(f"/jobs/{job.pk}/")
    expect(page.locator("#evaluation-summary")).to_contain_text(f"mAP@0.5{report['map50'] * 100:.1f}%")
    expect(page.locator("#boxes-per-class-table tbody tr")).to_have_count(2)
    expect(page.locator("#boxes-per-class-table tbody tr").first).to_contain_text("Car")
    curves = sum(curve is not None for curve in report["pr_curves"]["precision"].values())
    expect(page.locator("#pr-chart .scatterlayer .trace")).to_have_count(curves)
    figures = page.locator("#worst-gallery figure")
    expect(figures).to_have_count(len(report["worst"]))
    for number, image in enumerate(report["worst"][:3]):
        figure = figures.nth(number)
        expect(figure.locator("rect")).to_have_count(len(image["truth"]) + len(image["detections"]))
        expect(figure.locator("figcaption")).to_contain_text(f"{image['misses']} missed")
    expect(page.locator("#false-positives-table tbody tr")).to_have_count(len(report["false_positives"]))
    expect(page.locator("#missed-table tbody tr")).to_have_count(len(report["missed"]))
    expect(page.locator("#confusion")).to_be_hidden()
    expect(page.locator("#rows")).to_be_hidden()
    assert page.locator("#download-csv").get_attribute("href").endswith("/download/csv")


@pytest.mark.one_database
def test_compare_evaluates_a_groups_detectors_and_shows_their_map(alice, worker, trained):
    model = detector_job(alice, trained)
    model.group = "detectors"
    model.save(update_fields=["group"])
    client = signed_in(alice)
    page = client.get(reverse("group", args=[alice.username, "detectors"])).content.decode()
    assert "<th>mAP@0.5</th><th>mAP@0.5:0.95</th>" in page and "<th>Top-1</th>" not in page
    assert 'name="score_threshold"' in page
    response = client.post(reverse("api-compare", args=[alice.username, "detectors"]),
                           data=json.dumps({"split": "val", "score_threshold": 0.3}), content_type="application/json")
    assert response.status_code in (200, 201, 202), response.content
    (queued,) = response.json()["jobs"]
    assert Job.objects.get(pk=queued["id"]).params["report_options"] == {"score_threshold": 0.3}

    def rows() -> list[dict]:
        return client.get(reverse("api-compare", args=[alice.username, "detectors"])).json()["evaluations"]

    wait_for(lambda: rows() and rows()[0]["status"] == Status.DONE, timeout=TIMEOUT, what="the comparison to finish")
    (row,) = rows()
    evaluation = Job.objects.get(pk=row["id"])
    report = json.loads((evaluation.folder / OUTPUT / REPORT).read_text())
    assert (row["map50"], row["map"]) == (report["map50"], report["map"])
    assert 0 <= row["precision"] <= 1 and 0 <= row["recall"] <= 1
