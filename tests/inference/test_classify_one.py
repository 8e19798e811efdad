"""Classify one through the API, answered by a real model server: the top
classes of an uploaded image, of one of the dataset's and of a file on the
server; every layer and a saliency map when asked (LeNet trained here, and
ResNet-18); bad input refused with a message for its field; a deleted
model or snapshot a 404; no model server a 503; anyone signed in may
classify, nobody anonymous."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import signal
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import redis
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.http import HttpResponse
from django.test import Client
from PIL import Image

from accounts.models import ApiToken
from inference.classify import gallery
from jobs import services as job_services
from jobs.models import Job, Status
from tests.clients import signed_in
from tests.evalfiles import dataset_job, imports, write_bars
from tests.inferfiles import bar_images, png, trained_job, untrained_job
from tests.modelservers import model_server  # noqa: F401  (the fixture)
from tests.processes import wait_for
from tests.trainfiles import bars, make_dataset, train_config
from trainer import eventkinds, eventlog, jobfiles, modelclient

LENET_PARAMS = 431_080 - 6 * 501  # 10 classes in the reference count, 4 here
RESNET18_PARAMS = 11_689_512 - 64 * 2 * 7 * 7 - 512 * 996 - 996  # torchvision's, for 1 channel and 4 classes


@pytest.fixture(scope="module")
def trained_lenet(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("lenet")
    return trained_job(folder / "job", make_dataset(folder / "dataset"), epochs=1)


def model_job(owner, network: str = "lenet", status: str = Status.DONE) -> Job:
    dataset = dataset_job(owner)
    params = train_config(dataset.folder / jobfiles.DATASET, dataset=dataset.pk, network={"source": "standard", "name": network})
    return Job.objects.create(kind="train", name=network, owner=owner, status=status, params=params,
                              resources={"device": "cpu", "count": 1})


def point_at_dataset(model: Job) -> None:
    config = json.loads((model.folder / "config.json").read_text())
    config["dataset_dir"] = model.params["dataset_dir"]
    (model.folder / "config.json").write_text(json.dumps(config))


@pytest.fixture
def lenet(alice, trained_lenet) -> Job:
    """A done training job holding the LeNet trained once for this module."""
    model = model_job(alice)
    shutil.copytree(trained_lenet, model.folder)
    point_at_dataset(model)
    return model


@pytest.fixture
def resnet(alice) -> Job:
    """A done training job whose snapshot is a freshly built ResNet-18."""
    model = model_job(alice, "resnet18")
    untrained_job(model.folder, Path(model.params["dataset_dir"]), "resnet18")
    point_at_dataset(model)
    checkpoints = model.folder / jobfiles.CHECKPOINTS
    shutil.copyfile(checkpoints / jobfiles.LAST, checkpoints / jobfiles.BEST)
    eventlog.append(model.folder, eventkinds.RESULT, {"epochs": 1})
    return model



@pytest.fixture
def resnet64(alice) -> Job:
    """A done training job whose snapshot is a freshly built ResNet-18 for 64×64 colour images."""
    dataset = Job.objects.create(kind="dataset", name="colour bars", owner=alice, status=Status.DONE)
    folder = dataset.folder / jobfiles.DATASET
    make_dataset(folder, {"train": 2, "val": 2}, size=64, channels=3,
                 draw=lambda label, size, rng: np.repeat(bars(label, size, rng), 3, axis=2))
    params = train_config(folder, dataset=dataset.pk, network={"source": "standard", "name": "resnet18"})
    model = Job.objects.create(kind="train", name="resnet18", owner=alice, status=Status.DONE, params=params,
                               resources={"device": "cpu", "count": 1})
    untrained_job(model.folder, folder, "resnet18")
    checkpoints = model.folder / jobfiles.CHECKPOINTS
    shutil.copyfile(checkpoints / jobfiles.LAST, checkpoints / jobfiles.BEST)
    eventlog.append(model.folder, eventkinds.RESULT, {"epochs": 1})
    return model


def upload(client: Client, model: Job, image: bytes, **fields) -> HttpResponse:
    return client.post(f"/api/models/{model.pk}/classify", {"image": SimpleUploadedFile("image.png", image), **fields})


def post_json(client: Client, model: Job, body) -> HttpResponse:
    return client.post(f"/api/models/{model.pk}/classify", json.dumps(body), content_type="application/json")


def picture(data_url: str) -> Image.Image:
    assert data_url.startswith("data:image/png;base64,")
    return Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1])))


def test_an_uploaded_image_gets_its_top_classes_the_input_as_seen_and_the_time(lenet, alice, model_server):  # noqa: F811
    image, label = bar_images(1, seed=4)[0]
    response = upload(signed_in(alice), lenet, image)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert [t["index"] for t in answer["top"]][0] == label and len(answer["top"]) == 4
    assert sum(t["probability"] for t in answer["top"]) == pytest.approx(1, abs=1e-4)
    assert answer["snapshot"] == jobfiles.BEST and answer["note"] == ""
    assert picture(answer["seen"]).size == (28, 28)
    assert 0 < answer["seconds"] <= answer["total_seconds"]
    assert "layers" not in answer and "saliency" not in answer


@pytest.mark.parametrize("network, layers, params, first_shape", [
    ("lenet", 8, LENET_PARAMS, [20, 24, 24]), ("resnet18", 60, RESNET18_PARAMS, [64, 28, 28])])
def test_visualizations_show_every_layer_and_where_the_network_looked(
        request, alice, model_server, network, layers, params, first_shape):  # noqa: F811
    model = request.getfixturevalue({"lenet": "lenet", "resnet18": "resnet"}[network])
    image, _ = bar_images(1, seed=4)[0]
    response = upload(signed_in(alice), model, image, visualize="true")
    assert response.status_code == 200, response.content
    answer = response.json()
    assert len(answer["layers"]) == layers
    assert answer["params"] == answer["trainable"] == params == sum(layer["params"] for layer in answer["layers"])
    first, last = answer["layers"][0], answer["layers"][-1]
    assert (first["type"], first["output_shape"]) == ("Conv2d", first_shape)
    assert (last["type"], last["output_shape"]) == ("Linear", [4])
    assert picture(first["activations"]).size[0] > 24 and picture(first["weights"]["filters"]).size[0] > 24
    assert first["activation_stats"]["std"] > 0 and len(first["weights"]["histogram"]["counts"]) > 1
    assert last["weights"]["filters"] is None
    saliency = answer["saliency"]
    assert saliency["index"] == answer["top"][0]["index"] and picture(saliency["image"]).size == (28, 28)


def test_a_saliency_map_for_a_class_the_user_picks(lenet, alice, model_server):  # noqa: F811
    image, _ = bar_images(1, seed=4)[0]
    answer = upload(signed_in(alice), lenet, image, **{"class": "2"}).json()
    assert answer["saliency"]["index"] == 2 and answer["saliency"]["class"] == "diagonal"
    assert "layers" not in answer


def test_one_of_the_datasets_images_and_a_file_on_the_server_answer_as_their_uploads(lenet, alice, model_server):  # noqa: F811
    client = signed_in(alice)
    picked = post_json(client, lenet, {"split": "val", "index": 3})
    assert picked.status_code == 200, picked.content
    dataset = Job.objects.get(kind="dataset")
    stored = client.get(f"/datasets/{dataset.pk}/images/val/3.png").content
    assert picked.json()["top"] == upload(client, lenet, stored).json()["top"]

    path = write_bars(imports() / "classify", [1])[0]
    named = post_json(client, lenet, {"path": str(path), "snapshot": jobfiles.BEST})
    assert named.status_code == 200, named.content
    assert named.json()["top"] == upload(client, lenet, path.read_bytes()).json()["top"]
    assert str(imports()) not in named.content.decode()


def test_a_model_still_training_uses_its_newest_snapshot_and_says_so(alice, model_server, trained_lenet):  # noqa: F811
    model = model_job(alice, status=Status.RUNNING)
    shutil.copytree(trained_lenet, model.folder)
    point_at_dataset(model)
    lines = (model.folder / eventlog.FILENAME).read_text().splitlines()
    (model.folder / eventlog.FILENAME).write_text("".join(f"{line}\n" for line in lines if '"kind":"result"' not in line))
    newest = max((model.folder / jobfiles.CHECKPOINTS).glob("*.pt"), key=lambda path: path.stat().st_mtime)
    answer = upload(signed_in(alice), model, bar_images(1)[0][0]).json()
    assert "still training" in answer["note"] and answer["snapshot"] == newest.name


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def enormous_png() -> bytes:
    """A few bytes that claim 100,000 × 100,000 pixels: a decompression bomb."""
    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + chunk(b"IEND", b"")


def large_png(side: int) -> bytes:
    """A real black grayscale PNG of side × side pixels, a few hundred KB for millions of pixels."""
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    rows = zlib.compress(b"\0" * (side + 1) * side, 9)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


def peak_memory_bytes(pid: int) -> int:
    """The most resident memory the process has held (``VmHWM``)."""
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def test_an_image_of_too_many_pixels_is_refused_before_it_is_decoded(lenet, alice, model_server):  # noqa: F811
    """Judged by the model server's peak memory, not by a clock a loaded
    machine moves: decoded, the 81 megapixels would take 81 MB at least
    (700 MB measured, with their conversion)."""
    client = signed_in(alice)
    upload(client, lenet, bar_images(1)[0][0])  # the model loaded: its memory is in the peak already
    before = peak_memory_bytes(model_server.pid)
    message = refusal(upload(client, lenet, large_png(9000)), "image")  # below Pillow's bomb limit
    assert "81.0 megapixels" in message and "at most 40.0" in message
    assert peak_memory_bytes(model_server.pid) - before < 40 * 1024**2


def truncated_png() -> bytes:
    whole = png(np.random.default_rng(0).integers(0, 255, (64, 64, 1), dtype=np.uint8))
    return whole[:len(whole) // 2]


def refusal(response, field: str) -> str:
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert field in errors, errors
    message = errors[field][0]
    return message["message"] if isinstance(message, dict) else message


def test_grad_cam_on_a_small_resnet_looks_at_a_layer_with_a_useful_resolution_or_the_one_chosen(
        resnet64, alice, model_server):  # noqa: F811
    """ResNet-18's last convolution is 2×2 at 64×64: the map is computed at the deepest convolution whose output is
    at least 7×7 unless the user names another, and the answer says which and at what resolution."""
    client = signed_in(alice)
    image = png(np.repeat(bars(1, 64, np.random.default_rng(4)), 3, axis=2))
    response = upload(client, resnet64, image, **{"class": "1"})
    assert response.status_code == 200, response.content
    saliency = response.json()["saliency"]
    assert (saliency["layer"], saliency["size"]) == ("layer2.1.conv2", [8, 8])
    assert min(saliency["size"]) >= 4 and picture(saliency["image"]).size == (64, 64)
    offered = {layer["name"]: layer["size"] for layer in saliency["layers"]}
    assert offered["conv1"] == [32, 32] and offered["layer3.1.conv2"] == [4, 4] and offered["layer4.1.conv2"] == [2, 2]

    chosen = upload(client, resnet64, image, layer="layer3.1.conv2").json()["saliency"]
    assert (chosen["layer"], chosen["size"], chosen["index"]) == ("layer3.1.conv2", [4, 4], response.json()["top"][0]["index"])
    with_layers = upload(client, resnet64, image, visualize="true", layer="layer4.1.conv2").json()
    assert (with_layers["saliency"]["layer"], with_layers["saliency"]["size"]) == ("layer4.1.conv2", [2, 2])

    message = refusal(upload(client, resnet64, image, layer="layer9.conv"), "layer")
    assert "no convolution named 'layer9.conv'" in message and "layer2.1.conv2" in message
    assert "Give text" in refusal(post_json(client, resnet64, {"index": 1, "layer": ["conv1"]}), "layer")


@pytest.mark.parametrize("image, words", [
    (b"this is not an image", "cannot be used as an image"),
    (truncated_png(), "cannot be used as an image"),
    (enormous_png(), "cannot be used as an image"),
    (b"", "empty"),
])
def test_a_bad_upload_is_refused_with_its_message(lenet, alice, model_server, image, words):  # noqa: F811
    assert words in refusal(upload(signed_in(alice), lenet, image), "image")


@pytest.mark.parametrize("body, field, words", [
    ({}, "__all__", "Give one image"),
    ({"index": 1, "path": "x.png"}, "__all__", "Give one image"),
    ({"index": "two"}, "index", "whole number"),
    ({"index": -1}, "index", "greater than or equal"),
    ({"index": 10_000}, "index", "has 120 image(s)"),
    ({"index": 1, "split": "everything"}, "split", "valid choice"),
    ({"index": 1, "visualize": "perhaps"}, "visualize", "true or false"),
    ({"index": 1, "visualize": [True]}, "visualize", "true or false"),
    ({"index": 1, "class": 4}, "class", "4 classes"),
    ({"index": 1, "class": True}, "class", "whole number"),
    ({"index": 1, "snapshot": {"a": 1}}, "snapshot", "Give text"),
    ({"path": "/etc/passwd"}, "path", "not below the folders"),
    ({"path": "../../../etc/passwd"}, "path", "not below the folders"),
    ({"path": ["/etc/passwd"]}, "path", "Give text"),
])
def test_bad_json_is_refused_with_a_message_for_its_field(lenet, alice, body, field, words):
    message = refusal(post_json(signed_in(alice), lenet, body), field)
    assert words in message and "/etc" not in message


def test_a_missing_server_file_is_refused_without_naming_the_servers_folders(lenet, alice):
    message = refusal(post_json(signed_in(alice), lenet, {"path": str(imports() / "nothing.png")}), "path")
    assert "no file" in message and str(imports()) not in message


def test_a_deleted_model_or_snapshot_is_a_404(lenet, alice, model_server):  # noqa: F811
    client = signed_in(alice)
    image = bar_images(1)[0][0]
    response = upload(client, lenet, image, snapshot="epoch-9.pt")
    assert response.status_code == 404 and "no snapshot" in response.json()["error"]
    (lenet.folder / jobfiles.CHECKPOINTS / jobfiles.BEST).unlink()
    assert upload(client, lenet, image, snapshot=jobfiles.BEST).status_code == 404
    for absent in (999999, 2**63 - 1, 2**63, 10**30):  # the largest id a database holds, and past it
        answer = post_json(client, Job(pk=absent), {"index": 1})
        assert answer.status_code == 404 and answer.json()["error"] == f"There is no model #{absent}."
        assert client.get(f"/models/{absent}/classify").status_code == 404
    assert post_json(client, Job.objects.get(kind="dataset"), {"index": 1}).status_code == 404


def test_a_model_whose_dataset_was_deleted_is_refused_and_its_page_says_why(lenet, alice):
    """The manifest is read from the dataset's folder by its id, not its row:
    the deletion that takes both makes the model unusable at once."""
    client = signed_in(alice)
    assert upload(client, lenet, bar_images(1)[0][0]).status_code == 503  # usable; no model server here
    job_services.delete(Job.objects.get(pk=lenet.params["dataset"]), alice)
    assert refusal(upload(client, lenet, bar_images(1)[0][0]), "model") == "The model's dataset is gone."
    page = client.get(f"/models/{lenet.pk}/classify").content.decode()
    assert "The model&#x27;s dataset is gone." in page and 'id="classify-form"' not in page


def test_a_model_that_has_not_trained_yet_is_refused_and_its_page_says_why(alice):
    model = model_job(alice, status=Status.QUEUED)
    client = signed_in(alice)
    assert "not started training" in refusal(upload(client, model, bar_images(1)[0][0]), "model")
    page = client.get(f"/models/{model.pk}/classify").content.decode()
    assert "not started training" in page and 'id="classify-form"' not in page


def test_without_a_model_server_the_answer_is_503_with_a_clear_message(lenet, alice):
    response = upload(signed_in(alice), lenet, bar_images(1)[0][0])
    assert response.status_code == 503
    assert "model server is not running" in response.json()["error"]


def test_anyone_signed_in_may_classify_nobody_anonymous(lenet, bob, model_server):  # noqa: F811
    image = bar_images(1)[0][0]
    assert upload(Client(), lenet, image).status_code == 401
    assert upload(signed_in(bob), lenet, image).status_code == 200


def test_classify_one_with_a_token_asks_the_database_two_things(lenet, alice, model_server,  # noqa: F811
                                                                django_assert_num_queries):
    """The token's user and the model, each one statement: nothing else of
    the database is on Classify one's path (the dataset's manifest is read
    by its id), once the token's last use is up to date."""
    _, key = ApiToken.issue(alice, "loop")
    client = Client(headers={"Authorization": f"Token {key}"})
    image = bar_images(1)[0][0]
    assert upload(client, lenet, image).status_code == 200
    with django_assert_num_queries(2):
        answer = upload(client, lenet, image)
    assert answer.status_code == 200 and len(answer.json()["top"]) == 4


def test_the_page_offers_the_dataset_images_and_the_snapshots(lenet, alice):
    page = signed_in(alice).get(f"/models/{lenet.pk}/classify")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="classify-gallery"' in text and text.count('class="pick"') == 12
    assert '<option value="epoch-1.pt">' in text and str(imports()) not in text
    assert f'href="/models/{lenet.pk}/classify"' in signed_in(alice).get(f"/jobs/{lenet.pk}/").content.decode()


@pytest.mark.parametrize("classes, shown", [(7, 21), (8, 24), (9, 24)])
def test_the_gallery_takes_three_of_each_class_and_24_in_all(classes, shown):
    """``MAX_IMAGES`` (24): three images of each class, in their order, until 24."""
    labels = np.tile(np.arange(classes), 5)
    chosen = gallery._some_of_each_class(labels)
    assert chosen == list(range(classes * 3))[:shown] and gallery.MAX_IMAGES == 24


@pytest.mark.parametrize("position, seen", [(19_999, True), (20_000, False)])
def test_the_gallery_looks_at_the_first_20000_labels_only(position, seen):
    """``SCANNED`` (20,000): a class first found at the 20,000th label is
    shown, one found after it is not, however large the split."""
    labels = np.zeros(50_000, dtype=np.int64)
    labels[position] = 1
    assert (position in gallery._some_of_each_class(labels)) == seen and gallery.SCANNED == 20_000


def test_a_user_may_have_only_so_many_requests_in_flight_and_others_are_still_served(
        transactional_db, lenet, alice, bob, model_server, settings):  # noqa: F811
    settings.CLASSIFY_IN_FLIGHT_PER_USER = 2
    image = bar_images(1)[0][0]

    def send(user) -> HttpResponse:
        """One request in a thread of its own, as a web server serves it."""
        try:
            return upload(signed_in(user), lenet, image)
        finally:
            connection.close()

    assert send(alice).status_code == 200  # the model loaded, the web server warm
    waiting, queue = redis.Redis.from_url(settings.REDIS_URL), modelclient.requests_key(settings.REDIS_PREFIX)
    # Paused, as a busy model server, what is sent waits in its queue. Its
    # read of the queue that was under way when it stopped ends first (in a
    # second), or Redis would hand it the first request sent.
    os.kill(model_server.pid, signal.SIGSTOP)
    # A busy server keeps saying it is alive; a paused one cannot, so the
    # test says it for as long as the pause may last on a loaded machine.
    waiting.set(modelclient.alive_key(settings.REDIS_PREFIX), model_server.pid, ex=60)
    try:
        wait_for(lambda: not any("b" in found["flags"] for found in waiting.client_list()),
                 what="the paused model server's read of its queue to end")
        with ThreadPoolExecutor(3) as pool:
            in_flight = [pool.submit(send, alice), pool.submit(send, alice)]
            wait_for(lambda: waiting.llen(queue) == 2, what="alice's two requests in the queue")
            refused = send(alice)
            in_flight.append(pool.submit(send, bob))
            wait_for(lambda: waiting.llen(queue) == 3, what="bob's request in the queue")
            os.kill(model_server.pid, signal.SIGCONT)
            answers = [future.result() for future in in_flight]
    finally:
        os.kill(model_server.pid, signal.SIGCONT)
    assert refused.status_code == 429
    assert refused.json()["error"] == ("alice has 2 images being classified, the most a user may at once; "
                                       "try again when one is answered.")
    assert int(refused["Retry-After"]) >= 1
    assert [answer.status_code for answer in answers] == [200, 200, 200], "the cap is per user: bob is served"
    assert send(alice).status_code == 200, "an answered request gives its place back"
