"""Model archives through the app: "Download model archive" on a model's
page and ``POST /api/models/<id>/export`` make an export job (or give the
one already made for the same snapshot); a real worker writes the archive,
whose program and ONNX file predict what the app predicts, a detector's
and a segmenter's too; bad requests are refused with a message and create nothing."""

from __future__ import annotations

import io
import json
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor

import onnxruntime
import pytest
import torch
from django.contrib.auth.models import Permission
from django.db import connection

from datasets import services as dataset_services
from inference.export import services as exports
from jobs.models import Job, Status
from tests.clients import signed_in
from tests.detectionfiles import detection_config, make_detection_dataset, trained_detector
from tests.evalfiles import CPU, dataset_job, model_with_snapshot, trained_model
from tests.inferfiles import bar_images
from tests.instancefiles import copied_instances, train_instances_once
from tests.jobtools import events_of, wait_status
from tests.segmentationfiles import copied_segmenter, train_segmenter_once
from tests.trainfiles import train_config
from trainer import eventkinds, eventlog, jobfiles
from trainer.inference import classify, load_model, logits, preprocess
from trainer.tasks import classification_export, detection_export, instance_export, segmentation_export
from trainer.train import Run

TIMEOUT = 240



def export(client, model: Job, snapshot: str = "", expected: int = 201) -> Job:
    response = client.post(f"/api/models/{model.pk}/export", data=json.dumps({"snapshot": snapshot}),
                           content_type="application/json")
    assert response.status_code == expected, response.content
    return Job.objects.get(pk=response.json()["id"])


def streamed(response) -> bytes:
    """The body of a streamed response (read synchronously: the test client is no ASGI server)."""
    return b"".join(response.streaming_content)


@pytest.mark.one_database
def test_an_exported_archive_predicts_what_the_app_predicts(alice, bob, worker):
    model = trained_model(alice, epochs=2)
    client = signed_in(bob)  # anyone signed in may export any model
    page = signed_in(alice).get(f"/jobs/{model.pk}/").content.decode()
    assert "Download model archive" in page and '<option value="checkpoints/best.pt">best.pt</option>' in page

    job = export(client, model, "epoch-2.pt")
    assert job.kind == "export" and job.owner == bob and job.params["snapshot"] == "epoch-2.pt"
    assert export(client, model, "checkpoints/epoch-2.pt", expected=200).pk == job.pk, "the same snapshot: reused"
    button = client.post(f"/models/{model.pk}/export", {"snapshot": "checkpoints/epoch-2.pt"})
    assert button.status_code == 302 and button["Location"] == f"/jobs/{job.pk}/", "the page's button: the same job"
    assert client.get(f"/api/exports/{job.pk}/archive").status_code == 404, "not made yet"
    job = wait_status(job, Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert job.status == Status.DONE, job.error
    assert [e["data"]["stage"] for e in events_of(job, "progress")][:1] == ["Loading the snapshot"]
    assert export(client, model, "epoch-2.pt", expected=200).pk == job.pk, "a made archive is reused too"

    section = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/exports/{job.pk}/archive"' in section and "Download lenet-epoch-2.zip" in section
    response = client.get(f"/api/exports/{job.pk}/archive")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == 'attachment; filename="lenet-epoch-2.zip"'
    data = streamed(response)
    assert streamed(client.get(f"/exports/{job.pk}/archive")) == data

    loaded = load_model(model.folder, "epoch-2.pt")
    images = [image for image, _ in bar_images(16, seed=3)]
    x = torch.stack([preprocess(loaded, image).tensor for image in images])
    expected_logits = logits(loaded, x)
    top1 = [top[0]["index"] for top in classify(loaded, images)]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.namelist() == list(classification_export.FILES)
        program = torch.export.load(io.BytesIO(archive.read("model.pt2"))).module()
        session = onnxruntime.InferenceSession(archive.read("model.onnx"))
        assert json.loads(archive.read("info.json"))["snapshot"] == "epoch-2.pt"
    from_program = program(x).detach()
    from_onnx = torch.from_numpy(session.run(None, {"image": x.numpy()})[0])
    assert from_program.argmax(dim=1).tolist() == top1 == from_onnx.argmax(dim=1).tolist()
    assert torch.allclose(from_program, expected_logits, atol=1e-4, rtol=1e-4)
    assert torch.allclose(from_onnx, expected_logits, atol=1e-3, rtol=1e-3)

    # The best snapshot is rewritten while a model trains: a changed one is exported again.
    best = export(client, model)
    assert best.params["snapshot"] == "best.pt" and best.pk != job.pk
    best = wait_status(best, Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert best.status == Status.DONE, best.error
    (model.folder / "checkpoints" / "best.pt").write_bytes((model.folder / "checkpoints" / "best.pt").read_bytes())
    assert export(client, model).pk != best.pk


@pytest.mark.one_database
def test_a_detection_model_is_exported_from_its_page_and_the_api(alice, worker):
    dataset = Job.objects.create(kind="dataset", name="boxes", owner=alice, status=Status.DONE)
    dataset_dir = make_detection_dataset(dataset_services.folder(dataset))
    params = {**detection_config(dataset_dir, epochs=1, mean="none", batch_size=2), "dataset": dataset.pk}
    model = Job.objects.create(kind="train", name="boxes-frcnn", owner=alice, status=Status.DONE, params=params,
                               resources={"device": "cpu", "count": 1})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trained_detector(model.folder, dataset_dir, epochs=1, mean="none", batch_size=2)
    finally:
        torch.set_num_threads(threads)
    client = signed_in(alice)
    assert "Download model archive" in client.get(f"/jobs/{model.pk}/").content.decode()

    button = client.post(f"/models/{model.pk}/export", {"snapshot": "checkpoints/epoch-1.pt"})
    job = Job.objects.get(kind="export")
    assert button.status_code == 302 and button["Location"] == f"/jobs/{job.pk}/"
    assert export(client, model, "epoch-1.pt", expected=200).pk == job.pk, "the API gives the page's job"
    job = wait_status(job, Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert job.status == Status.DONE, job.error
    assert "Download boxes-frcnn-epoch-1.zip" in client.get(f"/jobs/{job.pk}/").content.decode()
    with zipfile.ZipFile(io.BytesIO(streamed(client.get(f"/api/exports/{job.pk}/archive")))) as archive:
        assert archive.namelist() == list(detection_export.FILES)
        session = onnxruntime.InferenceSession(archive.read("model.onnx"))
    boxes, scores, labels = session.run(None, {"image": torch.rand(3, 50, 64).numpy()})
    assert boxes.shape == (len(scores), 4) and labels.shape == scores.shape


@pytest.mark.one_database
def test_a_segmentation_model_is_exported_from_the_api_and_its_onnx_file_gives_its_logits(alice, worker,
                                                                                         tmp_path_factory):
    trained = train_segmenter_once(tmp_path_factory.mktemp("segmenter"), count=32, epochs=1)
    model = copied_segmenter(alice, trained)
    client = signed_in(alice)
    assert "Download model archive" in client.get(f"/jobs/{model.pk}/").content.decode()
    job = wait_status(export(client, model), Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert job.status == Status.DONE, job.error
    with zipfile.ZipFile(io.BytesIO(streamed(client.get(f"/api/exports/{job.pk}/archive")))) as archive:
        assert archive.namelist() == list(segmentation_export.FILES)
        session = onnxruntime.InferenceSession(archive.read("model.onnx"))
    x = torch.rand(2, 3, 24, 32) - 0.5
    with torch.no_grad():
        expected = load_model(model.folder).model(x)
    assert torch.allclose(torch.from_numpy(session.run(None, {"image": x.numpy()})[0]), expected, atol=1e-4)


@pytest.mark.one_database
def test_an_instance_segmentation_model_is_exported_from_the_api_and_its_onnx_file_gives_masks(
        alice, worker, tmp_path_factory):
    model = copied_instances(alice, train_instances_once(tmp_path_factory.mktemp("instances")))
    client = signed_in(alice)
    assert "Download model archive" in client.get(f"/jobs/{model.pk}/").content.decode()
    job = wait_status(export(client, model), Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert job.status == Status.DONE, job.error
    with zipfile.ZipFile(io.BytesIO(streamed(client.get(f"/api/exports/{job.pk}/archive")))) as archive:
        assert archive.namelist() == list(instance_export.FILES)
        session = onnxruntime.InferenceSession(archive.read("model.onnx"))
    boxes, scores, labels, masks = session.run(None, {"image": torch.rand(3, 40, 48).numpy() - 0.5})
    assert masks.shape == (len(scores), 1, 40, 48) and boxes.shape == (len(scores), 4) and labels.shape == scores.shape


@pytest.mark.one_database
def test_a_network_that_cannot_be_exported_fails_with_the_reason_and_leaves_no_archive(alice, worker):
    code = ("def build(channels, classes, height, width):\n"
            "    class Branchy(nn.Module):\n"
            "        def __init__(self):\n"
            "            super().__init__()\n"
            "            self.fc = nn.Linear(channels * height * width, classes)\n"
            "        def forward(self, x):\n"
            "            if x.sum() > 0:\n"
            "                return self.fc(x.flatten(1))\n"
            "            return -self.fc(x.flatten(1))\n"
            "    return Branchy()\n")
    alice.user_permissions.add(Permission.objects.get(content_type__app_label="training", codename="run_code"))
    dataset = dataset_job(alice)
    params = train_config(dataset.folder / jobfiles.DATASET, dataset=dataset.pk, network={"source": "python", "text": code})
    model = Job.objects.create(kind="train", name="branchy", owner=alice, status=Status.DONE, params=params,
                               resources={"device": "cpu", "count": 1})
    model.folder.mkdir(parents=True)
    (model.folder / "config.json").write_text(json.dumps({**params, "job_id": model.pk, "devices": ["cpu0"]}))
    Run({**params, "job_id": model.pk, "devices": ["cpu0"], "epochs": 1}, model.folder, CPU).train()

    job = wait_status(export(signed_in(alice), model, "epoch-1.pt"), Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert job.status == Status.FAILED
    assert job.error.startswith("The network cannot be exported as a program")
    assert not (job.folder / "export").exists() or not any((job.folder / "export").iterdir())
    assert signed_in(alice).get(f"/api/exports/{job.pk}/archive").status_code == 404
    assert export(signed_in(alice), model, "epoch-1.pt").pk != job.pk, "a failed export is not reused"


def test_exports_of_what_is_not_there_are_refused_and_create_nothing(alice, client):
    anonymous = client.post("/api/models/1/export", data="{}", content_type="application/json")
    assert anonymous.status_code == 401
    client.force_login(alice)
    dataset = dataset_job(alice)
    model = Job.objects.create(kind="train", name="lenet", owner=alice, status=Status.DONE,
                               params=train_config(dataset.folder / jobfiles.DATASET, dataset=dataset.pk),
                               resources={"device": "cpu", "count": 1})

    def refused(model_id: int, snapshot: str, status: int = 400) -> dict:
        response = client.post(f"/api/models/{model_id}/export", data=json.dumps({"snapshot": snapshot}),
                               content_type="application/json")
        assert response.status_code == status, response.content
        return response.json()

    assert refused(model.pk, "")["errors"]["model"] == ["The model has not started training yet: it has no snapshot."]
    (model.folder / "checkpoints").mkdir(parents=True)
    (model.folder / "config.json").write_text(json.dumps(model.params))
    assert refused(model.pk, "")["errors"]["model"] == ["The model has no snapshot yet."]
    (model.folder / "checkpoints" / "epoch-1.pt").write_bytes(b"weights")
    eventlog.append(model.folder, eventkinds.SNAPSHOT,
                    {"step": 10, "epoch": 1.0, "file": "checkpoints/epoch-1.pt", "best": False})
    assert refused(model.pk, "epoch-3.pt")["errors"]["snapshot"] == [
        "The model has no snapshot 'epoch-3.pt' (any more); it has epoch-1.pt."]
    assert refused(model.pk, "../../config.json")["errors"]["snapshot"]
    assert refused(model.pk + 100, "", status=404)["error"]
    assert refused(dataset.pk, "", status=404)["error"], "a dataset is not a model"
    page = client.post(f"/models/{model.pk}/export", {"snapshot": "epoch-3.pt"}, follow=True)
    assert "The model has no snapshot" in page.content.decode()
    assert not Job.objects.filter(kind="export").exists()
    assert client.get(f"/api/exports/{model.pk}/archive").status_code == 404, "a model is not an export"


def test_two_first_asks_at_once_make_one_export(alice, bob, transactional_db):
    model = model_with_snapshot(alice)
    start = threading.Barrier(4)

    def ask(owner) -> int:
        try:
            start.wait()
            return exports.export(owner, model, "epoch-1.pt")[0].pk
        finally:
            connection.close()

    with ThreadPoolExecutor(4) as pool:
        asked = list(pool.map(ask, [alice, bob, alice, bob]))
    assert Job.objects.filter(kind="export").count() == 1
    assert len(set(asked)) == 1
