"""Pretrained models: an uploaded state dict for a standard network (made
here from torchvision's ResNet-18, never downloaded) is checked by a real
worker and fine-tunes a new model through the API, its classifier re-made;
one made from a trained model's snapshot fine-tunes too. Wrong
architectures and hostile files fail with a message and leave nothing to
use; files that are no weights, too large or a state dict with no network
are refused before any job exists. Anyone signed in may use one; only its
owner or staff may delete it; the models fine-tuned from it are told."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
import torch
import torchvision
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from jobs.models import Job, Status
from tests.clients import signed_in
from tests.evalfiles import dataset_job, trained_model
from tests.jobtools import wait_status
from trainer import eventlog, jobfiles, pretrained_job

TIMEOUT = 240



def saved(state) -> bytes:
    out = io.BytesIO()
    torch.save(state, out)
    return out.getvalue()


@pytest.fixture(scope="module")
def resnet18_weights() -> bytes:
    return saved(torchvision.models.resnet18(weights=None).state_dict())


def upload(client, data: bytes, network: str = "", name: str = "weights", file_name: str = "resnet18.pth"):
    return client.post("/api/pretrained", {"name": name, "network": network,
                                           "weights": SimpleUploadedFile(file_name, data)})


def uploaded(client, data: bytes, network: str = "", name: str = "weights") -> Job:
    response = upload(client, data, network, name)
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def fine_tune(client, dataset: Job, pretrained: Job, name: str = "tuned"):
    return client.post("/api/models", data=json.dumps({
        "name": name, "dataset": dataset.pk, "network": {"source": "pretrained", "id": pretrained.pk}, "epochs": 1,
        "batch_size": 32, "lr": 0.01}), content_type="application/json")


class Payload:
    """Code in a pickle: loading it with weights_only=False would create the file."""

    def __init__(self, path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.one_database
def test_a_resnet18_state_dict_is_uploaded_checked_and_fine_tuned(alice, bob, worker, resnet18_weights):
    client = signed_in(alice)
    pretrained = wait_status(uploaded(client, resnet18_weights, "resnet18", name="resnet18 imagenet"),
                             Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert pretrained.status == Status.DONE, pretrained.error
    info = json.loads((pretrained.folder / jobfiles.PRETRAINED_INFO).read_text())
    assert (info["network"], len(info["classes"]), info["channels"], info["input_size"]) == (
        {"source": "standard", "name": "resnet18"}, 1000, 3, [224, 224])
    page = client.get(f"/jobs/{pretrained.pk}/").content.decode()
    assert "Fine-tune a new model from it" in page and '<dd id="pretrained-classes">1000</dd>' in page
    form = signed_in(bob).get("/models/new/").content.decode()
    assert f"Pretrained model: resnet18 imagenet #{pretrained.pk} (resnet18, 1000 classes)" in form

    # Anyone signed in may fine-tune from it: a grayscale 4-class dataset of 28×28 images, small, since
    # ResNet-18 trains at the pretrained model's input size.
    dataset = dataset_job(bob, train=16, val=4, test=4)
    response = fine_tune(signed_in(bob), dataset, pretrained)
    assert response.status_code == 201, response.content
    model = Job.objects.get(pk=response.json()["jobs"][0]["id"])
    assert model.params["network"] == {"source": "standard", "name": "resnet18"}
    assert model.params["pretrained"] == {"job": pretrained.pk, "mode": "finetune",
                                          "path": str(pretrained.folder / jobfiles.PRETRAINED_WEIGHTS)}
    model = wait_status(model, Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert model.status == Status.DONE, model.error
    log = (model.folder / jobfiles.LOG).read_text()
    assert "re-initialised conv1.weight, fc.bias, fc.weight" in log, "one input channel, four classes"

    cloned = client.post(f"/api/jobs/{pretrained.pk}/clone")
    assert cloned.status_code == 201, cloned.json()
    clone = Job.objects.get(pk=cloned.json()["id"])
    assert clone.params["source"]["path"] == str(clone.folder / jobfiles.PRETRAINED_UPLOAD), "its own copy"

    assert signed_in(bob).delete(f"/api/jobs/{pretrained.pk}").status_code == 403, "only its owner or staff"
    assert signed_in(alice).delete(f"/api/jobs/{pretrained.pk}").status_code == 204
    told = signed_in(bob).get(f"/api/jobs/{model.pk}").json()["lost_dependencies"]
    assert len(told) == 1 and f"(#{pretrained.pk}) was deleted by alice" in told[0], "the model fine-tuned from it is told"
    clone = wait_status(clone, Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert clone.status == Status.DONE, clone.error


@pytest.mark.one_database
def test_a_snapshot_made_into_a_pretrained_model_fine_tunes_a_new_model(alice, worker):
    source = trained_model(alice, epochs=1)
    client = signed_in(alice)
    page = client.get(f"/jobs/{source.pk}/").content.decode()
    assert "Make pretrained model" in page
    response = client.post(f"/api/models/{source.pk}/pretrained", data=json.dumps({"snapshot": "epoch-1.pt"}),
                           content_type="application/json")
    assert response.status_code == 201, response.content
    pretrained = wait_status(Job.objects.get(pk=response.json()["id"]), Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert pretrained.status == Status.DONE, pretrained.error
    assert pretrained.name == "lenet (epoch-1)"
    weights = torch.load(pretrained.folder / jobfiles.PRETRAINED_WEIGHTS, weights_only=True)
    snapshot = torch.load(source.folder / "checkpoints" / "epoch-1.pt", weights_only=True)
    assert all(torch.equal(weights["model"][k], v) for k, v in snapshot["model"].items())

    response = fine_tune(client, dataset_job(alice, train=40, val=10, test=0), pretrained)
    assert response.status_code == 201, response.content
    model = wait_status(Job.objects.get(pk=response.json()["jobs"][0]["id"]), Status.DONE, Status.FAILED,
                        timeout=TIMEOUT)
    assert model.status == Status.DONE, model.error
    log = (model.folder / jobfiles.LOG).read_text()
    assert f"loaded 8 tensors from {pretrained.folder / jobfiles.PRETRAINED_WEIGHTS}" in log
    assert "re-initialised" not in log, "the same network and classes: every weight kept"


def run_job(owner, data: bytes, network: str) -> Job:
    """A pretrained job of an upload, run here by the job's own module as the worker runs it."""
    job = uploaded(signed_in(owner), data, network)
    (job.folder / jobfiles.CONFIG).write_text(json.dumps({**job.params, "job_id": job.pk}))
    code = pretrained_job.main(str(job.folder / jobfiles.CONFIG))
    assert code == 1
    assert not (job.folder / jobfiles.PRETRAINED).exists() and not (job.folder / "pretrained.partial").exists()
    errors = [e["data"]["message"] for e in eventlog.read_all(job.folder) if e["kind"] == "error"]
    return errors[-1]


def test_a_state_dict_of_another_architecture_is_refused_with_what_differs(alice, resnet18_weights):
    message = run_job(alice, resnet18_weights, "resnet34")
    assert message.startswith("The state dict for ResNet-34 is not for this network's architecture: missing "
                              "layer1.2.conv1.weight")
    trained_lenet = saved({"model": {"conv.weight": torch.zeros(20, 1, 5, 5)}})
    assert "no classifier that fits resnet18" in run_job(alice, trained_lenet, "resnet18")


def test_hostile_weights_files_are_refused_without_running_their_code(alice, tmp_path):
    marker = tmp_path / "ran"
    message = run_job(alice, saved({"model": Payload(marker)}), "resnet18")
    assert "not a PyTorch weights file that can be read safely" in message
    assert not marker.exists()
    archive_with_code = io.BytesIO()
    with zipfile.ZipFile(archive_with_code, "w") as archive:
        archive.writestr("info.json", json.dumps({"network": {"source": "python", "text": f"open({str(marker)!r}, 'w')"},
                                                  "classes": ["a"], "channels": 1, "height": 8, "width": 8}))
        archive.writestr("weights.safetensors", b"")
    assert "written in Python, and building it runs its code" in run_job(alice, archive_with_code.getvalue(), "")
    assert not marker.exists()


def test_uploads_that_are_no_weights_too_large_or_without_a_network_create_nothing(alice, settings, resnet18_weights):
    client = signed_in(alice)

    def refused(data: bytes, network: str = "", file_name: str = "weights.pt") -> dict:
        response = upload(client, data, network, file_name=file_name)
        assert response.status_code == 400, response.content
        return response.json()["errors"]

    assert refused(b"#!/bin/sh\nrm -rf /\n", "resnet18")["weights"][0]["message"].startswith(
        "The file is neither a model archive nor a PyTorch weights file")
    assert refused(b"\x89PNG\r\n\x1a\n", "resnet18")["weights"]
    assert refused(resnet18_weights)["network"][0]["message"] == "Say which standard network the state dict is for."
    assert refused(resnet18_weights, "resnet99")["network"]
    settings.PRETRAINED_MAX_BYTES = 1024 * 1024
    too_large = refused(resnet18_weights, "resnet18")["weights"][0]["message"]
    assert too_large.startswith("The file is larger than the limit of 1.0") and too_large.endswith("(PRETRAINED_MAX_BYTES).")
    assert client.post("/pretrained/new/", {"name": "x", "network": "resnet18",
                                            "weights": SimpleUploadedFile("x.pt", b"text")}).status_code == 200
    assert not Job.objects.filter(kind="pretrained").exists()
    assert Client().post("/api/pretrained", {"name": "x"}).status_code == 401


def test_the_new_model_form_offers_pretrained_models_only_when_there_are_some(alice):
    client = signed_in(alice)
    dataset = dataset_job(alice)
    page = client.get("/models/new/").content.decode()
    assert 'value="pretrained"' in page and 'id="no-pretrained"' in page
    response = client.post("/api/models", data=json.dumps({"name": "x", "dataset": dataset.pk,
                                                            "network": {"source": "pretrained", "id": 5}}),
                           content_type="application/json")
    assert response.status_code == 400
    assert response.json()["errors"]["network_source"][0]["message"].startswith("No pretrained model is made yet")

    made = Job.objects.create(kind="pretrained", name="mine", owner=alice, status=Status.DONE, params={})
    (made.folder / jobfiles.PRETRAINED).mkdir(parents=True)
    (made.folder / jobfiles.PRETRAINED_INFO).write_text(json.dumps({
        "network": {"source": "python", "text": "def build(c, k, h, w): ..."}, "classes": ["a", "b"], "channels": 1,
        "input_size": [28, 28], "parameters": 10, "source": "upload"}))
    other = client.post("/api/models", data=json.dumps({"name": "x", "dataset": dataset.pk,
                                                         "network": {"source": "pretrained", "id": made.pk + 1}}),
                        content_type="application/json")
    assert other.json()["errors"]["pretrained_model"][0]["message"] == "Choose one of the pretrained models."
    code = client.post("/api/models", data=json.dumps({"name": "x", "dataset": dataset.pk,
                                                        "network": {"source": "pretrained", "id": made.pk}}),
                       content_type="application/json")
    assert "Only users allowed to run code" in code.json()["errors"]["pretrained_model"][0]["message"]


def test_make_pretrained_model_on_a_models_page_queues_one_of_the_chosen_snapshot(alice, bob):
    dataset = dataset_job(alice)
    model = Job.objects.create(kind="train", name="lenet", owner=alice, status=Status.DONE,
                               params={"dataset": dataset.pk}, resources={"device": "cpu", "count": 1})
    (model.folder / "checkpoints").mkdir(parents=True)
    (model.folder / jobfiles.CONFIG).write_text("{}")
    (model.folder / "checkpoints" / "epoch-1.pt").write_bytes(b"weights")
    client = signed_in(bob)
    missing = client.post(f"/models/{model.pk}/pretrained", {"snapshot": "checkpoints/epoch-9.pt"}, follow=True)
    assert "has no snapshot &#x27;checkpoints/epoch-9.pt&#x27;" in missing.content.decode()
    assert not Job.objects.filter(kind="pretrained").exists()
    made = client.post(f"/models/{model.pk}/pretrained", {"snapshot": "checkpoints/epoch-1.pt"})
    job = Job.objects.get(kind="pretrained")
    assert made.status_code == 302 and made["Location"] == f"/jobs/{job.pk}/"
    assert (job.owner, job.name, job.params["source"]["snapshot"]) == (bob, "lenet (epoch-1)", "epoch-1.pt")
    assert client.post("/models/999/pretrained", {"snapshot": ""}).status_code == 404


def test_only_its_owner_or_staff_may_delete_a_pretrained_model(alice, bob, staff):
    mine = Job.objects.create(kind="pretrained", name="mine", owner=alice, status=Status.DONE, params={})
    theirs = Job.objects.create(kind="pretrained", name="theirs", owner=bob, status=Status.FAILED, params={})
    assert signed_in(bob).delete(f"/api/jobs/{mine.pk}").status_code == 403
    assert signed_in(staff).delete(f"/api/jobs/{mine.pk}").status_code == 204
    assert signed_in(bob).delete(f"/api/jobs/{theirs.pk}").status_code == 204
    assert not Job.objects.filter(kind="pretrained").exists()
