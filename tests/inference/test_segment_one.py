"""Segment one through the API and in a real browser, answered by a real
model server: a U-Net (trained here for a few seconds on the scenes) gives
an uploaded image a mask of its own size, a dataset's image and a file on
the server are answered the same way; bad input is refused with a message
for its field; a classifier cannot segment and a segmenter can neither
classify nor detect, on the page and in the API; no model server is a 503;
anyone signed in may segment, nobody anonymous. In the browser, the mask is
drawn over the image in its classes' colours, and the opacity slider and a
class's toggle redraw it without asking again."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import HttpResponse
from django.test import Client
from PIL import Image

from jobs.models import Job
from tests.browser import held_until_enabled, needs_chromium, sign_up
from tests.clients import signed_in
from tests.evalfiles import imports, model_with_snapshot
from tests.modelservers import model_server  # noqa: F401  (the fixture)
from tests.segmentationfiles import CLASSES, copied_segmenter, png, scene, train_segmenter_once
from trainer import jobfiles
from trainer.segmentation.labels import IGNORE


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return train_segmenter_once(tmp_path_factory.mktemp("segmenter"), count=32, epochs=4)


@pytest.fixture
def segmenter(alice, trained) -> Job:
    return copied_segmenter(alice, trained)


def upload(client: Client, model: Job, image: bytes, **fields) -> HttpResponse:
    return client.post(f"/api/models/{model.pk}/segment", {"image": SimpleUploadedFile("image.png", image), **fields})


def post_json(client: Client, model: Job, body) -> HttpResponse:
    return client.post(f"/api/models/{model.pk}/segment", json.dumps(body), content_type="application/json")


def refusal(response, field: str) -> str:
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert field in errors, errors
    message = errors[field][0]
    return message["message"] if isinstance(message, dict) else message


def unseen(size: tuple[int, int] = (80, 60)) -> bytes:
    """A scene the model never saw, larger than its 32×24."""
    return png(scene(1234, size)[0])


def mask_of(answer: dict) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(answer["mask"]))))


def check_answer(answer: dict, width: int, height: int) -> np.ndarray:
    """The answer's mask (checked against its own size, classes and counts)."""
    assert (answer["width"], answer["height"]) == (width, height)
    mask = mask_of(answer)
    assert mask.shape == (height, width) and mask.dtype == np.uint8
    pixels = [row["pixels"] for row in answer["classes"]]
    assert pixels == sorted(pixels, reverse=True) and all(count > 0 for count in pixels)
    for row in answer["classes"]:
        assert set(row) == {"index", "class", "pixels"} and row["class"] == CLASSES[row["index"]]
        assert row["pixels"] == int((mask == row["index"]).sum())
    assert sum(pixels) == int((mask != IGNORE).sum())
    return mask


def test_an_uploaded_image_gets_a_mask_of_its_own_size_and_the_model_stays_warm(segmenter, alice, model_server):  # noqa: F811
    response = upload(signed_in(alice), segmenter, unseen())
    assert response.status_code == 200, response.content
    answer = response.json()
    mask = check_answer(answer, 80, 60)
    assert (mask != IGNORE).all(), "squashed: the network saw every pixel"
    assert answer["model"] == segmenter.pk and answer["snapshot"] == jobfiles.BEST and answer["note"] == ""
    assert 0 < answer["seconds"] <= answer["total_seconds"] and answer["loaded_now"]
    again = upload(signed_in(alice), segmenter, unseen()).json()
    assert not again["loaded_now"] and again["mask"] == answer["mask"]


def test_one_of_the_datasets_images_and_a_file_on_the_server_are_answered_too(segmenter, alice, model_server):  # noqa: F811
    client = signed_in(alice)
    picked = post_json(client, segmenter, {"split": "val", "index": 1})
    assert picked.status_code == 200, picked.content
    check_answer(picked.json(), 32, 24)
    path = imports() / "scene.png"
    path.write_bytes(unseen())
    on_server = post_json(client, segmenter, {"path": str(path)})
    assert on_server.status_code == 200, on_server.content
    assert on_server.json()["mask"] == upload(client, segmenter, unseen()).json()["mask"]


def test_a_bad_upload_is_refused_with_its_message(segmenter, alice, model_server):  # noqa: F811
    for image, words in ((b"this is not an image", "cannot be used as an image"), (b"", "submitted file is empty")):
        assert words in refusal(upload(signed_in(alice), segmenter, image), "image")


@pytest.mark.parametrize("body, field, words", [
    ({}, "__all__", "Give one image"),
    ({"index": 10_000}, "index", "has 8 image(s)"),
    ({"path": "/etc/passwd"}, "path", "not below the folders"),
    ({"index": 1, "snapshot": ["best.pt"]}, "snapshot", "Give text"),
])
def test_bad_json_is_refused_with_a_message_for_its_field(segmenter, alice, body, field, words):
    message = refusal(post_json(signed_in(alice), segmenter, body), field)
    assert words in message and "/etc" not in message


def test_a_classifier_cannot_segment_and_a_segmenter_can_neither_classify_nor_detect(segmenter, alice):
    client = signed_in(alice)
    classifier = model_with_snapshot(alice)
    sentence = "Segment is not available for Classification models."
    assert refusal(upload(client, classifier, unseen()), "model") == sentence
    page = client.get(f"/models/{classifier.pk}/segment").content.decode()
    assert sentence in page and 'id="segment-form"' not in page
    for use, name in (("classify", "Classify"), ("detect", "Detect")):
        refused = client.post(f"/api/models/{segmenter.pk}/{use}", {"image": SimpleUploadedFile("a.png", unseen())})
        assert refusal(refused, "model") == f"{name} is not available for Semantic segmentation models."


def test_the_job_page_offers_segment_for_a_segmenter_and_not_for_a_classifier(segmenter, alice):
    client = signed_in(alice)
    text = client.get(f"/jobs/{segmenter.pk}/").content.decode()
    assert f'id="segment-one" href="/models/{segmenter.pk}/segment"' in text
    assert 'id="classify-one"' not in text and 'id="detect-one"' not in text
    classifier = client.get(f"/jobs/{model_with_snapshot(alice).pk}/").content.decode()
    assert 'id="classify-one"' in classifier and 'id="segment-one"' not in classifier


def test_the_page_offers_the_classes_in_their_colours_and_the_snapshots(segmenter, alice):
    page = signed_in(alice).get(f"/models/{segmenter.pk}/segment")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="segment-form"' in text and '<option value="best.pt">' in text
    data = page.context["data"]
    assert data["classes"] == list(CLASSES) and len(data["colours"]) == len(CLASSES)
    for index, (name, colour) in enumerate(zip(CLASSES, data["colours"], strict=True)):
        assert f'data-class="{index}" checked>' in text and f'background: {colour}"></span> {name}' in text
    assert "<script>" not in text, "the page's data is JSON, its code a file: the CSP allows no inline script"


def test_a_deleted_snapshot_is_a_404_and_no_model_server_a_503(segmenter, alice):
    client = signed_in(alice)
    response = upload(client, segmenter, unseen(), snapshot="epoch-9.pt")
    assert response.status_code == 404 and "no snapshot" in response.json()["error"]
    response = upload(client, segmenter, unseen())
    assert response.status_code == 503 and "model server is not running" in response.json()["error"]


def test_anyone_signed_in_may_segment_nobody_anonymous(segmenter, bob, model_server):  # noqa: F811
    assert upload(Client(), segmenter, unseen()).status_code == 401
    assert upload(signed_in(bob), segmenter, unseen()).status_code == 200


def drawn(page) -> np.ndarray:
    """The mask canvas's pixels, H×W×4."""
    width, height, pixels = page.evaluate("""() => {
        const canvas = document.getElementById('segment-mask');
        return [canvas.width, canvas.height,
                Array.from(canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data)];
    }""")
    return np.array(pixels, dtype=np.uint8).reshape(height, width, 4)


@needs_chromium
def test_the_mask_is_drawn_in_its_classes_colours_and_redrawn_without_asking_again(page, model_server, trained):  # noqa: F811
    from playwright.sync_api import expect

    sign_up(page, "ada")
    model = copied_segmenter(User.objects.get(username="ada"), trained)
    asked = []
    page.on("request", lambda request: request.method == "POST" and request.url.endswith("/segment")
            and asked.append(request.url))
    page.goto(f"/jobs/{model.pk}/")
    held_until_enabled(page, "inference/segment.js", "#segment-one", "#segment-button")
    page.set_input_files("#segment-image", files=[{"name": "scene.png", "mimeType": "image/png", "buffer": unseen()}])
    with page.expect_response("**/segment") as reply:
        page.click("#segment-button")
    answer = reply.value.json()
    expect(page.locator("#segment-mask")).to_have_attribute("data-drawn", "true", timeout=60_000)
    assert page.evaluate("document.getElementById('segment-picture').naturalWidth") == 80
    mask = mask_of(answer)
    expect(page.locator("#segment-table tbody tr")).to_have_count(len(answer["classes"]))

    slider = page.locator("#segment-opacity")
    slider.focus()
    page.keyboard.press("End")  # opaque: the canvas holds the colours themselves, not premultiplied ones
    colours = page.evaluate("JSON.parse(document.getElementById('segment-data').textContent).colours")
    table = np.array([[int(hex_[at:at + 2], 16) for at in (1, 3, 5)] for hex_ in colours], dtype=np.uint8)
    pixels = drawn(page)
    assert (pixels[..., 3] == 255).all()
    assert np.array_equal(pixels[..., :3], table[mask])

    found = answer["classes"][0]["index"]
    page.uncheck(f"#segment-classes input[data-class='{found}']")
    pixels = drawn(page)
    assert (pixels[..., 3] == np.where(mask == found, 0, 255)).all()
    slider.focus()
    page.keyboard.press("Home")
    assert (drawn(page)[..., 3] == 0).all(), "opacity 0 draws nothing"
    assert len(asked) == 1, "the slider and the toggles redraw the one answer"
