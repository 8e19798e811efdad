"""Detect one through the API, answered by a real model server: the boxes a
detector (Faster R-CNN, trained here for a few seconds: its boxes are few
and poor, so their structure is checked, not their quality) finds in an
uploaded image, in that image's pixels, and in one of the dataset's and a
file on the server; bad input refused with a message for its field; a
classification model refused with the sentence saying so, on the page and
in the API, and a detector refused by Classify one; no model server a 503;
anyone signed in may detect, nobody anonymous. The job page offers Detect
for a detector and Classify for a classifier, never the other."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import HttpResponse
from django.test import Client
from PIL import Image

from jobs.models import Job
from tests.clients import signed_in
from tests.detectionfiles import COLOURS, SIZE, copied_detector, rectangle_image, train_detector_once
from tests.evalfiles import imports, model_with_snapshot
from tests.modelservers import model_server  # noqa: F401  (the fixture)
from trainer import jobfiles

KEYS = {"index", "class", "score", "x1", "y1", "x2", "y2"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return train_detector_once(tmp_path_factory.mktemp("detector"))


@pytest.fixture
def detector(alice, trained) -> Job:
    return copied_detector(alice, trained)


def upload(client: Client, model: Job, image: bytes, **fields) -> HttpResponse:
    return client.post(f"/api/models/{model.pk}/detect", {"image": SimpleUploadedFile("image.png", image), **fields})


def post_json(client: Client, model: Job, body) -> HttpResponse:
    return client.post(f"/api/models/{model.pk}/detect", json.dumps(body), content_type="application/json")


def refusal(response, field: str) -> str:
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert field in errors, errors
    message = errors[field][0]
    return message["message"] if isinstance(message, dict) else message


def unseen(size: int = SIZE) -> bytes:
    return rectangle_image("Car", np.random.default_rng(77), size)[0]


def check_boxes(answer: dict, width: int, height: int) -> None:
    assert (answer["width"], answer["height"]) == (width, height)
    scores = [box["score"] for box in answer["boxes"]]
    assert scores == sorted(scores, reverse=True) and all(0.05 <= score <= 1 for score in scores)
    for box in answer["boxes"]:
        assert set(box) == KEYS and box["class"] == list(COLOURS)[box["index"]]
        assert 0 <= box["x1"] < box["x2"] <= width and 0 <= box["y1"] < box["y2"] <= height


def test_an_uploaded_image_gets_its_boxes_in_its_own_pixels_and_the_time(detector, alice, model_server):  # noqa: F811
    response = upload(signed_in(alice), detector, unseen())
    assert response.status_code == 200, response.content
    answer = response.json()
    check_boxes(answer, SIZE, SIZE)
    assert answer["boxes"], "the detector answers with some boxes, however poor"
    assert answer["model"] == detector.pk and answer["snapshot"] == jobfiles.BEST and answer["note"] == ""
    assert 0 < answer["seconds"] <= answer["total_seconds"] and answer["loaded_now"]
    again = upload(signed_in(alice), detector, unseen()).json()
    assert not again["loaded_now"] and again["boxes"] == answer["boxes"], "the model stays warm"


def test_a_larger_image_than_the_datasets_gets_boxes_spread_over_it(detector, alice, model_server):  # noqa: F811
    """The model sees 32×32; a 128×96 JPEG's boxes come back four and three times as far."""
    small = upload(signed_in(alice), detector, unseen()).json()
    out = io.BytesIO()
    Image.open(io.BytesIO(unseen())).resize((128, 96), Image.Resampling.NEAREST).save(out, format="JPEG", quality=95)
    large = upload(signed_in(alice), detector, out.getvalue()).json()
    check_boxes(large, 128, 96)
    best, scaled = small["boxes"][0], large["boxes"][0]
    assert best["class"] == scaled["class"]
    assert [scaled[k] for k in ("x1", "y1", "x2", "y2")] == pytest.approx(
        [best["x1"] * 4, best["y1"] * 3, best["x2"] * 4, best["y2"] * 3], abs=4)


def test_one_of_the_datasets_images_and_a_file_on_the_server_are_answered_too(detector, alice, model_server):  # noqa: F811
    client = signed_in(alice)
    picked = post_json(client, detector, {"split": "val", "index": 1})
    assert picked.status_code == 200, picked.content
    check_boxes(picked.json(), SIZE, SIZE)
    path = imports() / "car.png"
    path.write_bytes(unseen())
    on_server = post_json(client, detector, {"path": str(path)})
    assert on_server.status_code == 200, on_server.content
    assert on_server.json()["boxes"] == upload(client, detector, unseen()).json()["boxes"]


@pytest.mark.parametrize("image, words", [
    (b"this is not an image", "cannot be used as an image"),
    (b"", "submitted file is empty"),
])
def test_a_bad_upload_is_refused_with_its_message(detector, alice, model_server, image, words):  # noqa: F811
    assert words in refusal(upload(signed_in(alice), detector, image), "image")


@pytest.mark.parametrize("body, field, words", [
    ({}, "__all__", "Give one image"),
    ({"index": 10_000}, "index", "has 12 image(s)"),
    ({"path": "/etc/passwd"}, "path", "not below the folders"),
    ({"index": 1, "snapshot": ["best.pt"]}, "snapshot", "Give text"),
])
def test_bad_json_is_refused_with_a_message_for_its_field(detector, alice, body, field, words):
    message = refusal(post_json(signed_in(alice), detector, body), field)
    assert words in message and "/etc" not in message


def test_a_classification_model_cannot_detect_and_a_detector_cannot_classify(detector, alice):
    client = signed_in(alice)
    classifier = model_with_snapshot(alice)
    sentence = "Detect is not available for Classification models."
    assert refusal(upload(client, classifier, unseen()), "model") == sentence
    page = client.get(f"/models/{classifier.pk}/detect").content.decode()
    assert sentence in page and 'id="detect-form"' not in page
    refused = client.post(f"/api/models/{detector.pk}/classify", {"image": SimpleUploadedFile("a.png", unseen())})
    assert refusal(refused, "model") == "Classify is not available for Object detection models."


def test_the_job_page_offers_detect_for_a_detector_and_classify_for_a_classifier(detector, alice):
    client = signed_in(alice)
    detector_page = client.get(f"/jobs/{detector.pk}/").content.decode()
    assert f'href="/models/{detector.pk}/detect"' in detector_page
    assert 'id="classify-one"' not in detector_page and "Classify is not available" not in detector_page
    classifier = model_with_snapshot(alice)
    classifier_page = client.get(f"/jobs/{classifier.pk}/").content.decode()
    assert 'id="classify-one"' in classifier_page and 'id="detect-one"' not in classifier_page


def test_the_page_offers_the_classes_and_the_snapshots(detector, alice):
    page = signed_in(alice).get(f"/models/{detector.pk}/detect")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="detect-form"' in text and '<option value="best.pt">' in text
    for index, name in enumerate(COLOURS):
        assert f'data-class="{index}" checked>' in text and name in text
    assert "<script>" not in text, "the page's data is JSON, its code a file: the CSP allows no inline script"


def test_a_deleted_snapshot_is_a_404(detector, alice, model_server):  # noqa: F811
    client = signed_in(alice)
    response = upload(client, detector, unseen(), snapshot="epoch-9.pt")
    assert response.status_code == 404 and "no snapshot" in response.json()["error"]
    (detector.folder / jobfiles.CHECKPOINTS / jobfiles.BEST).unlink()
    assert upload(client, detector, unseen(), snapshot=jobfiles.BEST).status_code == 404


def test_without_a_model_server_the_answer_is_503_with_a_clear_message(detector, alice):
    response = upload(signed_in(alice), detector, unseen())
    assert response.status_code == 503
    assert "model server is not running" in response.json()["error"]


def test_anyone_signed_in_may_detect_nobody_anonymous(detector, bob, model_server):  # noqa: F811
    assert upload(Client(), detector, unseen()).status_code == 401
    assert upload(signed_in(bob), detector, unseen()).status_code == 200
