"""The New model page and API: defaults, validation, sweeps, the learning
rate preview, Customize and Visualize (real subprocesses of the trainer's
inspector), the Python permission, and starting from an earlier model. No
worker runs: submitted jobs stay queued."""

from __future__ import annotations

import html
import json

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from jobs.models import Job, Status
from tests.clients import signed_in
from tests.trainer.test_networks import ALIAS_BOMB
from trainer import jobfiles, lr_policy, tasks
from trainer.catalog import NETWORKS
from trainer.targets import ClassLabels
from trainer.tasks import Metric, Task
from training import sweeps
from training.forms import NewModelForm
from training.jsondata import defaults

LINEAR = ("def build(channels, classes, height, width):\n"
          "    return nn.Sequential(nn.Flatten(), nn.Linear(channels * height * width, classes))\n")


def dataset(owner: User, status: str = Status.DONE, name: str = "digits", shape=(28, 28, 1), classes: int = 10,
            train: int = 1000) -> Job:
    """A dataset job row with the manifest its build would have written."""
    job = Job.objects.create(kind="dataset", name=name, owner=owner, status=status,
                             resources={"device": "cpu", "count": 1})
    if status == Status.DONE:
        folder = job.folder / jobfiles.DATASET
        folder.mkdir(parents=True)
        splits = {"train": train, "val": train // 4, "test": 0}
        manifest = {"version": 1, "options": {}, "classes": [f"c{i}" for i in range(classes)],
                    "image_shape": list(shape), "encoding": "none",
                    "splits": {s: {"count": n, "per_class": [n // classes] * classes} for s, n in splits.items()},
                    "skipped": {"total": 0, "per_class": {}}, "warnings": [], "mean": None, "seconds": 0.1, "files": {}}
        (folder / jobfiles.MANIFEST).write_text(json.dumps(manifest))
    return job



def create(client: Client, **fields):
    return client.post("/api/models", data=json.dumps(fields), content_type="application/json")


def errors(response) -> dict[str, str]:
    assert response.status_code == 400, response.content
    return {field: " ".join(e["message"] for e in found) for field, found in response.json()["errors"].items()}


@pytest.fixture
def digits(alice):
    return dataset(alice)


@pytest.fixture
def root(db):
    return User.objects.create_superuser("admin", password="correct horse battery")


def test_the_page_renders_every_group_and_field_with_digits_defaults(alice, digits):
    dataset(alice, status=Status.RUNNING, name="still building")
    response = signed_in(alice).get("/models/new/")
    assert response.status_code == 200
    page = response.content.decode()
    for legend in ("Data", "Network", "Solver", "Learning rate", "Augmentation", "Precision &amp; devices", "Stopping"):
        assert f"<legend>{legend}</legend>" in page
    form = response.context["form"]
    for name in ("dataset", "name", "epochs", "val_interval", "snapshot_interval", "seed", "batch_size",
                 "batch_accumulation", "batch_schedule", "mean", "crop", "standard_network", "layers_text", "python_text",
                 "solver", "momentum", "weight_decay", "label_smoothing", "lr", "lr_policy", "step_percent", "gamma",
                 "milestones_percent", "power", "warmup_percent", "translate", "flip", "rotation", "scale", "noise",
                 "color_jitter", "precision", "channels_last", "compile", "device", "gpu_count", "gpu_ids", "scale_lr",
                 "early_stopping", "patience"):
        assert f'data-field="{name}"' in page, name
        assert form[name].auto_id in page, name
    assert f"digits #{digits.pk} · 28×28 grayscale · 10 classes" in page
    assert "still building" not in page
    assert 'value="python" id="id_network_source_python"\n        \n        disabled' in page
    assert "May run custom Python network code" in page
    assert reverse("plotly-js") in page
    data = json.loads(page.split('id="model-page-data" type="application/json">')[1].split("</script>")[0])
    assert data["networks"]["lenet"]["input_size"] == [28, 28]
    assert "momentum" in data["momentum"] and "sgd" not in data["momentum"]
    assert data["policies"]["step"] == ["step_percent", "gamma", "warmup_percent"]
    assert signed_in(alice).get("/").content.decode().count(reverse("new-model")) == 2  # nav and home button


def test_the_defaults_are_digits_ones_but_sgd_with_momentum(alice):
    initial = defaults(NewModelForm)
    assert {k: initial[k] for k in ("epochs", "val_interval", "snapshot_interval", "keep_snapshots", "batch_size",
                                    "batch_accumulation",
                                    "solver", "lr", "momentum", "weight_decay", "lr_policy", "step_percent", "gamma",
                                    "mean", "precision", "scale_lr", "early_stopping", "patience", "network_source",
                                    "standard_network")} == {
        "epochs": 30, "val_interval": 1.0, "snapshot_interval": 1.0, "keep_snapshots": 3, "batch_size": "64",
        "batch_accumulation": 1,
        "solver": "momentum", "lr": "0.01", "momentum": 0.9, "weight_decay": 0.0001, "lr_policy": "step",
        "step_percent": 33.0, "gamma": 0.1, "mean": "image", "precision": "fp32", "scale_lr": True,
        "early_stopping": "none", "patience": 5, "network_source": "standard", "standard_network": "lenet"}


def test_the_api_creates_a_model_with_the_pages_defaults(alice, digits):
    response = create(signed_in(alice), name="first", dataset=digits.pk)
    assert response.status_code == 201, response.content
    (detail,) = response.json()["jobs"]
    job = Job.objects.get(pk=detail["id"])
    assert (job.kind, job.name, job.group, job.status, job.resources) == (
        "train", "first", "", Status.QUEUED, {"device": "cpu", "count": 1})
    params = dict(job.params)
    assert isinstance(params.pop("seed"), int)
    assert params == {
        "task": "classification", "dataset": digits.pk, "dataset_dir": str(digits.folder / "dataset"),
        "network": {"source": "standard", "name": "lenet"}, "pretrained": None,
        "epochs": 30, "val_interval": 1.0, "snapshot_interval": 1.0, "keep_snapshots": 3, "batch_size": 64,
        "batch_accumulation": 1, "solver": "momentum", "lr": 0.01, "momentum": 0.9, "weight_decay": 0.0001,
        "lr_policy": {"name": "step", "step_percent": 33.0, "gamma": 0.1, "milestones_percent": [50.0, 75.0],
                      "power": 1.0, "warmup_percent": 0.0, "start_factor": 0.2, "peak_percent": 23.0, "end_factor": 0.07},
        "scale_lr": True, "batch_schedule": [], "mean": "image", "crop": None, "translate": 0, "flip": "none",
        "rotation": 0.0, "scale": 0.0, "noise": 0.0, "color_jitter": 0.0, "label_smoothing": 0.0, "tta": "none",
        "norm_bias_lr_scale": None, "norm_bias_weight_decay": None, "averaging": None, "whiten_bias_epochs": None,
        "precision": "fp32", "channels_last": False, "compile": False, "early_stopping": None}


def test_a_dataset_of_a_task_that_does_not_train_is_neither_listed_nor_taken(alice, digits, monkeypatch):
    monkeypatch.setitem(tasks.TASKS, "counting", Task("counting", "Counting", metrics=(Metric("exact", "exact"),),
                                                      metrics_title="exact counts", targets=ClassLabels(),
                                                      training=None, plan=""))
    counted = dataset(alice, name="counted")
    manifest = counted.folder / jobfiles.DATASET / jobfiles.MANIFEST
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "task": "counting"}))
    client = signed_in(alice)
    page = client.get("/models/new/").content.decode()
    assert f'value="{digits.pk}"' in page and f'value="{counted.pk}"' not in page
    refused = errors(create(client, name="counter", dataset=counted.pk))
    assert refused["dataset"] == (f"The dataset “counted” (#{counted.pk}) is for counting, and no network of "
                                  "this app trains for it yet.")


@pytest.fixture
def boxes(alice):
    """A built detection dataset (colour images, two classes)."""
    from tests.detectionfiles import make_detection_dataset

    job = Job.objects.create(kind="dataset", name="boxes", owner=alice, status=Status.DONE)
    make_detection_dataset(job.folder / jobfiles.DATASET)
    return job


DETECTOR = {"source": "standard", "name": "fasterrcnn_mobilenet_v3_large_fpn"}


def test_the_page_offers_each_task_its_own_networks_sources_and_options(alice, digits, boxes):
    client = signed_in(alice)
    page = client.get("/models/new/")
    data = page.context["page_data"]
    assert {str(digits.pk): "classification", str(boxes.pk): "detection"}.items() <= data["dataset_tasks"].items()
    detection = data["tasks"]["detection"]
    assert detection["networks"] == list(tasks.TASKS["detection"].networks) and "lenet" not in detection["networks"]
    assert detection["sources"] == ["standard"] and detection["flips"] == ["none", "horizontal"]
    assert {"crop", "rotation", "tta", "label_smoothing"} <= set(detection["refused"]) and detection["presets"] == []
    classification = data["tasks"]["classification"]
    assert "lenet" in classification["networks"] and "fasterrcnn_resnet50_fpn" not in classification["networks"]
    assert classification["presets"] == ["speedrun"] and classification["flips"] is None
    assert "fasterrcnn_mobilenet_v3_large_fpn" not in data["customizable"] and "resnet18" in data["customizable"]
    assert data["initials"]["crop"] is None and data["initials"]["tta"] == "none" and not data["initials"]["compile"]
    assert "flip" not in detection["refused"] and "compile" in detection["refused"]


def test_a_detection_model_takes_a_detector_and_only_the_options_that_move_its_boxes(alice, boxes):
    client = signed_in(alice)
    why = "A model for object detection cannot use this yet: its only augmentation is a horizontal flip, which " \
          "moves the boxes with the pixels."
    refused = errors(create(client, name="d", dataset=boxes.pk, network=DETECTOR, batch_size=2, crop=20, rotation=5.0,
                            flip="both", tta="mirror", label_smoothing=0.1, translate=2, compile=True))
    assert refused == {**{name: why for name in ("crop", "rotation", "flip", "tta", "label_smoothing", "translate")},
                       "compile": "A model for object detection cannot use this yet: torch.compile recompiles a "
                                  "detector at every batch (its proposals change in number), which costs far more "
                                  "than it saves."}
    offered = ("Faster R-CNN MobileNetV3-Large FPN, Faster R-CNN ResNet-50 FPN, RetinaNet ResNet-50 FPN, "
               "FCOS ResNet-50 FPN, SSDlite MobileNetV3-Large, SSD300 VGG-16")
    lenet = {"source": "standard", "name": "lenet"}
    assert errors(create(client, name="d", dataset=boxes.pk, batch_size=2, network=lenet)) == {
        "standard_network": f"lenet is not a network for object detection; choose one of: {offered}."}
    layers = {"source": "layers", "text": "- flatten\n- linear: {out: classes}"}
    assert errors(create(client, name="d", dataset=boxes.pk, batch_size=2, network=layers)) == {
        "network_source": "A model for object detection starts from: standard network."}

    made = create(client, name="detector", dataset=boxes.pk, network=DETECTOR, flip="horizontal", lr=0.01, batch_size=2,
                  solver="adamw", epochs=3)
    assert made.status_code == 201, made.content
    params = Job.objects.get(pk=made.json()["jobs"][0]["id"]).params
    assert (params["task"], params["network"], params["flip"]) == ("detection", DETECTOR, "horizontal")


def pretrained_model(owner: User, name: str, network: str) -> Job:
    """A done pretrained model row with the info file its job writes (no weights: the form reads only the info)."""
    job = Job.objects.create(kind="pretrained", name=name, owner=owner, status=Status.DONE)
    (job.folder / jobfiles.PRETRAINED_INFO).parent.mkdir(parents=True)
    (job.folder / jobfiles.PRETRAINED_INFO).write_text(json.dumps({
        "network": {"source": "standard", "name": network}, "classes": ["a", "b"], "channels": 3}))
    return job


def test_a_detectors_backbone_starts_from_a_pretrained_classifier_of_its_network(alice, boxes):
    resnet = pretrained_model(alice, "imagenet-ish", "resnet50")
    mobile = pretrained_model(alice, "phones", "mobilenet_v3")
    lenet = pretrained_model(alice, "digits", "lenet")
    client = signed_in(alice)
    choices = dict(client.get("/models/new/").context["form"].fields["backbone_model"].widget.choices)
    assert resnet.pk in choices and mobile.pk in choices and lenet.pk not in choices

    retinanet = {"source": "standard", "name": "retinanet_resnet50_fpn"}
    made = create(client, name="r", dataset=boxes.pk, batch_size=2, network=retinanet, backbone_model=resnet.pk)
    assert made.status_code == 201, made.content
    params = Job.objects.get(pk=made.json()["jobs"][0]["id"]).params
    assert params["network"] == retinanet and params["pretrained"] == {
        "job": resnet.pk, "path": str(resnet.folder / jobfiles.PRETRAINED_WEIGHTS), "mode": "backbone"}

    assert errors(create(client, name="r", dataset=boxes.pk, batch_size=2, network=retinanet,
                         backbone_model=mobile.pk)) == {
        "backbone_model": "RetinaNet ResNet-50 FPN's backbone starts from a ResNet-50 classifier, and this pretrained "
                          "model is not one."}
    assert errors(create(client, name="r", dataset=boxes.pk, batch_size=2, backbone_model=resnet.pk,
                         network={"source": "standard", "name": "ssd300_vgg16"})) == {
        "backbone_model": "SSD300 VGG-16 has no backbone that starts from a pretrained model; leave Backbone weights "
                          "blank."}
    assert errors(create(client, name="r", dataset=boxes.pk, batch_size=2, network=retinanet, backbone_model=99999)) == {
        "backbone_model": "Choose one of the pretrained models."}


def test_visualize_and_customize_build_a_detector_as_its_runs_do(alice, boxes):
    client = signed_in(alice)

    def visualize(network):
        return client.post("/models/visualize", json.dumps({"network": network, "dataset": boxes.pk}),
                           content_type="application/json")

    answer = visualize(DETECTOR).json()
    assert answer["input"] == [3, 30, 40] and answer["classes"] == 2
    predictor = [layer for layer in answer["summary"]["layers"] if layer["name"] == "roi_heads.box_predictor.cls_score"]
    assert predictor[0]["output_shape"] == [3]  # the two classes and the background
    refused = visualize({"source": "standard", "name": "lenet"})
    assert refused.status_code == 400 and refused.json()["error"].startswith("lenet is not a network for object detection")
    customize = client.get("/models/customize", {"name": DETECTOR["name"]})
    assert customize.status_code == 400
    assert customize.json()["error"].startswith("'fasterrcnn_mobilenet_v3_large_fpn' is not a standard network that can "
                                                "be customized")


def test_early_stopping_watches_the_loss_or_the_datasets_own_headline_metric(alice, monkeypatch):
    counting = Task("counting", "Counting", metrics=(Metric("exact", "exact count"),), metrics_title="exact counts",
                    targets=ClassLabels(), training="", plan="", networks=NETWORKS)
    monkeypatch.setitem(tasks.TASKS, "counting", counting)
    counted = dataset(alice, name="counted")
    manifest = counted.folder / jobfiles.DATASET / jobfiles.MANIFEST
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "task": "counting"}))
    client = signed_in(alice)
    refused = errors(create(client, name="stops", dataset=counted.pk, early_stopping="val_top1"))
    assert refused["early_stopping"] == ("A counting dataset's validation does not report val_top1: "
                                         "stop on the validation loss or val_exact.")
    response = create(client, name="stops", dataset=counted.pk, early_stopping="val_loss")
    assert response.status_code == 201, response.content
    assert Job.objects.get(pk=response.json()["jobs"][0]["id"]).params["task"] == "counting"


def test_the_api_takes_the_params_own_shapes(alice, digits):
    response = create(signed_in(alice), name="shaped", dataset=digits.pk, seed=7, lr=[0.05], batch_size=32,
                      network={"source": "layers", "text": [{"conv": {"out": 4, "kernel": 3}}, "flatten",
                                                            {"linear": {"out": "classes"}}]},
                      lr_policy={"name": "multistep", "milestones_percent": [30, 60], "gamma": 0.5},
                      early_stopping={"metric": "val_top1", "patience": 3}, batch_schedule=[[10, 64]], crop=24,
                      device="gpu", gpu_ids=[0, 2], precision="bf16")
    assert response.status_code == 201, response.content
    params = Job.objects.get(pk=response.json()["jobs"][0]["id"]).params
    assert params["seed"] == 7 and params["lr"] == 0.05 and params["batch_size"] == 32 and params["crop"] == 24
    assert params["network"]["source"] == "layers" and json.loads(params["network"]["text"])[1] == "flatten"
    assert params["lr_policy"]["name"] == "multistep" and params["lr_policy"]["milestones_percent"] == [30.0, 60.0]
    assert params["early_stopping"] == {"metric": "val_top1", "patience": 3}
    assert params["batch_schedule"] == [[10, 64]] and params["precision"] == "bf16"
    assert Job.objects.get(pk=response.json()["jobs"][0]["id"]).resources == {"device": "gpu", "ids": [0, 2]}
    exp = create(signed_in(alice), name="exp", dataset=digits.pk, lr_policy="exp", warmup_percent=2)
    assert Job.objects.get(pk=exp.json()["jobs"][0]["id"]).params["lr_policy"] == {
        "name": "exp", "gamma": 0.95, "warmup_percent": 2.0, "step_percent": 33.0, "milestones_percent": [50.0, 75.0],
        "power": 1.0, "start_factor": 0.2, "peak_percent": 23.0, "end_factor": 0.07}
    averaged = create(signed_in(alice), name="ema", dataset=digits.pk, averaging={"kind": "ema", "decay": 0.99, "every": 2})
    assert Job.objects.get(pk=averaged.json()["jobs"][0]["id"]).params["averaging"] == {
        "kind": "ema", "decay": 0.99, "every": 2}


@pytest.mark.parametrize(("fields", "field", "message"), [
    ({"network": {"source": "layers", "text": "- conv: {out: 20, kernel: 5}\n- pool: {kernel: 2}"}},
     "layers_text", "Layer 2: unknown type 'pool'"),
    ({"network": {"source": "layers", "text": "- conv: {out: 20"}}, "layers_text", "Not valid YAML"),
    ({"network": {"source": "python", "text": LINEAR}}, "python_text", "Only users allowed to run code"),
    ({"batch_schedule": "10-128"}, "batch_schedule", "is not epoch:batch size"),
    ({"batch_schedule": "40:128"}, "batch_schedule", "past the last epoch"),
    ({"lr": "0.1, fast"}, "lr", "“fast” is not a number"),
    ({"lr": "0"}, "lr", "above 0"),
    ({"batch_size": "32, 6.5"}, "batch_size", "not a whole number"),
    ({"batch_size": "2000"}, "batch_size", "do not make one batch of 2000"),
    ({"lr": ",".join(f"0.{i}" for i in range(1, 10)), "batch_size": "1,2,3,4,5,6,7,8"}, "lr",
     "9 learning rates × 8 batch sizes make 72 jobs; a sweep has at most 64"),
    ({"lr_policy": "step", "step_percent": 0}, "lr_policy", "Step size (% of training) must be more than 0"),
    ({"lr_policy": "multistep", "milestones_percent": "75, 50"}, "lr_policy", "increasing order"),
    ({"lr_policy": ["step"]}, "lr_policy", "Select a valid choice"),
    ({"lr_policy": "exp", "gamma": 1e308}, "lr_policy", "Gamma makes the learning rate grow past"),
    ({"crop": 32}, "crop", "must fit in the dataset's 28×28 images"),
    ({"snapshot_interval": 0.05}, "snapshot_interval",
     "Snapshots are taken at most 10 times an epoch: the interval is at least 0.1 epochs."),
    ({"whiten_bias_epochs": 3}, "whiten_bias_epochs", "Only the fast small-image network (airbench) has a whitening"),
    ({"averaging": "ema", "average_decay": 1.0}, "average_decay", "less than or equal to 0.9999"),
    ({"lr_policy": "linear", "peak_percent": 0}, "lr_policy", "Peak at (% of training) must be more than 0"),
    ({"momentum": True}, "momentum", "Enter a number."),  # JSON's true is not 1
    ({"weight_decay": False}, "weight_decay", "Enter a number."),
    ({"epochs": True}, "epochs", "Enter a whole number."),
    ({"pretrained": {"job": 999, "file": "checkpoints/best.pt"}}, "network_source",
     "No finished or aborted model has saved a snapshot yet"),
])
def test_invalid_fields_are_400_with_the_reason(alice, digits, fields, field, message):
    response = create(signed_in(alice), name="bad", dataset=digits.pk, **fields)
    assert message in errors(response).get(field, ""), errors(response)
    assert not Job.objects.filter(kind="train").exists()


def test_a_dataset_that_is_not_built_is_refused(alice):
    building = dataset(alice, status=Status.RUNNING, name="half")
    found = errors(create(signed_in(alice), name="m", dataset=building.pk))
    assert found["dataset"] == f"The dataset “half” (#{building.pk}) is running; choose a dataset whose build is done."
    assert "There is no dataset #999" in errors(create(signed_in(alice), name="m", dataset=999))["dataset"]
    assert "This field is required" in errors(create(signed_in(alice), name="m"))["dataset"]


def test_python_networks_are_for_users_with_the_permission(alice, root, digits):
    response = create(signed_in(root), name="code", dataset=digits.pk, network={"source": "python", "text": LINEAR})
    assert response.status_code == 201, response.content
    assert Job.objects.get(pk=response.json()["jobs"][0]["id"]).params["network"] == {"source": "python", "text": LINEAR}
    assert "Line 1" in errors(create(signed_in(root), name="x", dataset=digits.pk,
                                     network={"source": "python", "text": "def build(:"}))["python_text"]
    assert "must define build" in errors(create(signed_in(root), name="x", dataset=digits.pk,
                                                network={"source": "python", "text": "x = 1"}))["python_text"]
    alice.user_permissions.add(Permission.objects.get(codename="run_code", content_type__app_label="training"))
    alice = User.objects.get(pk=alice.pk)  # a fresh permission cache
    assert create(signed_in(alice), name="code", dataset=digits.pk,
                  network={"source": "python", "text": LINEAR}).status_code == 201
    page = signed_in(root).get("/models/new/").content.decode()
    assert "May run custom Python network code" not in page


def test_a_sweep_makes_one_job_per_combination_in_one_group(alice, digits):
    response = create(signed_in(alice), name="sw", dataset=digits.pk, lr="0.1, 0.01", batch_size="32,64", seed=3)
    assert response.status_code == 201, response.content
    jobs = Job.objects.filter(kind="train").order_by("pk")
    assert [j.name for j in jobs] == ["sw lr=0.1 bs=32", "sw lr=0.1 bs=64", "sw lr=0.01 bs=32", "sw lr=0.01 bs=64"]
    assert {j.group for j in jobs} == {"sw sweep"}
    assert [(j.params["lr"], j.params["batch_size"]) for j in jobs] == [(0.1, 32), (0.1, 64), (0.01, 32), (0.01, 64)]
    assert {j.params["seed"] for j in jobs} == {3}
    assert [j["id"] for j in response.json()["jobs"]] == [j.pk for j in jobs]
    named = create(signed_in(alice), name="g", group="mine", dataset=digits.pk, lr=[0.1, 0.2], seed=3)
    assert {j["group"] for j in named.json()["jobs"]} == {"mine"}


def page_fields(**changes) -> dict:
    fields = {k: v for k, v in defaults(NewModelForm).items() if v is not False}
    fields["scale_lr"] = "on"
    return {**fields, **changes}


def test_the_page_redirects_to_the_job_or_the_sweeps_group(alice, digits):
    client = signed_in(alice)
    response = client.post("/models/new/", page_fields(name="one", dataset=digits.pk))
    job = Job.objects.get(name="one")
    assert response.status_code == 302 and response["Location"] == reverse("job", args=[job.pk])
    response = client.post("/models/new/", page_fields(name="two", dataset=digits.pk, lr="0.1,0.2"))
    assert response.status_code == 302 and response["Location"] == reverse("group", args=["alice", "two sweep"])
    response = client.post("/models/new/", page_fields(name="three", dataset=digits.pk, network_source="python",
                                                         python_text=LINEAR))
    assert response.status_code == 400
    assert "Only users allowed to run code" in response.content.decode()


def test_without_earlier_models_the_page_posts_no_previous_network_fields(alice, digits):
    client = signed_in(alice)
    page = client.get("/models/new/").content.decode()
    assert 'name="pretrained_mode"' not in page and "No finished or aborted model has saved a snapshot yet" in page
    shown = {k: v for k, v in page_fields(name="first", dataset=digits.pk).items()
             if k not in ("previous_job", "previous_snapshot", "pretrained_mode")}
    response = client.post("/models/new/", shown)
    assert response.status_code == 302, errors(response) if response.status_code == 400 else response
    response = client.post("/models/new/", {**shown, "name": "second", "network_source": "previous"})
    assert response.status_code == 400
    assert "No finished or aborted model has saved a snapshot yet; choose another network." in response.content.decode()


def test_the_lr_preview_matches_the_policys_curve(alice, digits):
    client = signed_in(alice)
    body = {"lr": "0.1", "lr_policy": "step", "step_percent": "25", "gamma": "0.5", "epochs": "10", "batch_size": "64",
            "dataset": str(digits.pk), "device": "cpu", "scale_lr": True}
    answer = client.post("/models/lr-preview", json.dumps(body), content_type="application/json").json()
    policy = {"name": "step", "step_percent": 25.0, "gamma": 0.5, "milestones_percent": [50.0, 75.0], "power": 1.0,
              "warmup_percent": 0.0}
    assert answer["total_steps"] == 1000 // 64 * 10
    assert answer["points"] == [list(p) for p in lr_policy.curve(policy, 0.1, 150)]
    assert answer["effective_lr"] == 0.1 and answer["world_size"] == 1
    assert answer["description"] == lr_policy.describe(policy, 0.1)

    four_gpus = client.post("/api/lr-preview", json.dumps({**body, "device": "gpu", "gpu_count": 4}),
                            content_type="application/json").json()
    scaled = lr_policy.warmup_for(policy, 4, True)
    assert four_gpus["total_steps"] == 250 // 64 * 10 and four_gpus["effective_lr"] == pytest.approx(0.4)
    assert four_gpus["warmup_percent"] == 5.0
    assert four_gpus["points"] == [list(p) for p in lr_policy.curve(scaled, 0.4, 30)]

    no_dataset = client.post("/models/lr-preview", json.dumps({"lr": "0.01", "epochs": 3}), content_type="application/json")
    assert no_dataset.json()["total_steps"] == 300
    bad = client.post("/models/lr-preview", json.dumps({"lr": "x"}), content_type="application/json")
    assert bad.status_code == 400 and "is not a number" in bad.json()["error"]
    assert Client().post("/api/lr-preview", "{}", content_type="application/json").status_code == 401


def test_customize_gives_the_editor_text_of_a_standard_network(alice):
    client = signed_in(alice)
    lenet = client.get("/models/customize?name=lenet").json()
    assert lenet["source"] == "layers" and "conv" in lenet["text"] and "classes" in lenet["text"]
    resnet = client.get("/models/customize?name=resnet18").json()
    assert resnet["source"] == "python" and "def build(" in resnet["text"]
    unknown = client.get("/models/customize?name=nope")
    assert unknown.status_code == 400
    assert unknown.json()["error"].startswith("'nope' is not a standard network that can be customized")


def test_visualize_lists_the_layers_for_the_datasets_images_or_says_why_not(alice, digits):
    client = signed_in(alice)

    def visualize(network, **extra):
        return client.post("/models/visualize", json.dumps({"network": network, "dataset": digits.pk, **extra}),
                           content_type="application/json")

    answer = visualize({"source": "standard", "name": "lenet"}).json()
    assert answer["input"] == [1, 28, 28] and answer["classes"] == 10
    summary = answer["summary"]
    assert [(row["type"], row["output_shape"]) for row in summary["layers"]][:2] == [("Conv2d", [20, 24, 24]),
                                                                                    ("MaxPool2d", [20, 12, 12])]
    assert summary["layers"][-1]["output_shape"] == [10]
    assert summary["params"] == 431080  # DIGITS' LeNet for 28×28 digits and 10 classes

    too_big = visualize({"source": "layers", "text": "- conv: {out: 4, kernel: 5}\n- flatten\n- linear: {out: classes}"},
                        crop=4)
    assert too_big.status_code == 400 and "does not fit" in too_big.json()["error"]
    refused = visualize({"source": "python", "text": LINEAR})
    assert refused.status_code == 400 and "allowed to run code" in refused.json()["error"]
    bad = visualize({"source": "layers", "text": "- conv: {kernel: 5}"})
    assert bad.status_code == 400 and "missing argument 'out'" in bad.json()["error"]
    assert "must be a whole number that fits" in visualize({"source": "standard", "name": "lenet"}, crop=29).json()["error"]


def test_a_yaml_alias_bomb_is_refused_by_visualize_and_the_api_in_a_short_answer(alice, digits):
    client = signed_in(alice)
    network = {"source": "layers", "text": ALIAS_BOMB}
    for answer in (client.post("/models/visualize", json.dumps({"network": network, "dataset": digits.pk}),
                               content_type="application/json"),
                   create(client, name="bomb", dataset=digits.pk, network=network)):
        assert answer.status_code == 400 and len(answer.content) < 1000
        assert "YAML anchors (&name) and aliases (*name) are not allowed" in answer.json()["error"]


def test_an_error_that_shows_a_long_value_is_cut_short(alice, digits):
    answer = create(signed_in(alice), name="long", dataset=digits.pk, lr_policy="x" * 100_000)
    assert answer.status_code == 400 and len(answer.content) < 3000
    assert answer.json()["errors"]["lr_policy"][0]["message"].startswith("Select a valid choice. xxx")


def test_visualize_builds_no_network_past_its_limits(alice, digits, settings):
    client = signed_in(alice)

    def visualize(text):
        return client.post("/models/visualize", json.dumps({"network": {"source": "layers", "text": text},
                                                              "dataset": digits.pk}), content_type="application/json")

    settings.INSPECT_MAX_PARAMS = 10_000
    many = visualize("- flatten\n- linear: {out: 4096}\n- linear: {out: classes}")
    assert many.status_code == 400 and "more than the 10,000 that Visualize builds" in many.json()["error"]
    settings.INSPECT_MAX_PARAMS = 10**12
    settings.INSPECT_MEMORY_BYTES = 5 * 1024**3  # torch takes about 4 GiB of address space by itself
    huge = visualize("- flatten\n- linear: {out: 200000}\n- linear: {out: 4096}\n- linear: {out: classes}")
    assert huge.status_code == 400 and "more memory than Visualize may use" in huge.json()["error"], huge.json()
    no_data = client.post("/models/visualize", json.dumps({"network": {"source": "standard", "name": "lenet"}}),
                          content_type="application/json")
    assert no_data.status_code == 400 and no_data.json()["error"].startswith("Choose a dataset first")


def earlier_model(owner: User, digits: Job, status: str = Status.DONE) -> Job:
    network = {"source": "layers", "text": "- flatten\n- linear: {out: classes}"}
    job = Job.objects.create(kind="train", name="earlier", owner=owner, status=status,
                             params={"dataset": digits.pk, "network": network}, resources={"device": "cpu", "count": 1})
    (job.folder / "checkpoints").mkdir(parents=True)
    for name in ("epoch-2.pt", "epoch-10.pt", "best.pt", "last.pt"):
        (job.folder / "checkpoints" / name).write_bytes(b"weights")
    return job


def test_a_model_can_start_from_a_snapshot_of_an_earlier_one(alice, digits):
    earlier = earlier_model(alice, digits, status=Status.ABORTED)
    client = signed_in(alice)
    page = client.get("/models/new/")
    assert page.context["form"].previous[0]["snapshots"] == ["checkpoints/epoch-2.pt", "checkpoints/epoch-10.pt",
                                                             "checkpoints/best.pt"]
    response = create(client, name="tuned", dataset=digits.pk,
                      pretrained={"job": earlier.pk, "path": str(earlier.folder / "checkpoints" / "epoch-10.pt"),
                                  "mode": "continue"})
    assert response.status_code == 201, response.content
    params = Job.objects.get(pk=response.json()["jobs"][0]["id"]).params
    assert params["network"] == earlier.params["network"]
    assert params["pretrained"] == {"job": earlier.pk, "path": str(earlier.folder / "checkpoints" / "epoch-10.pt"),
                                    "mode": "continue"}

    last = errors(create(client, name="x", dataset=digits.pk, pretrained={"job": earlier.pk, "file": "checkpoints/last.pt"}))
    assert "Choose one of its snapshots" in last["previous_snapshot"]
    outside = errors(create(client, name="x", dataset=digits.pk, pretrained={"job": earlier.pk, "file": "/etc/passwd"}))
    assert "previous_snapshot" in outside
    five = dataset(alice, name="five", classes=5)
    other = errors(create(client, name="x", dataset=five.pk,
                          pretrained={"job": earlier.pk, "file": "checkpoints/best.pt", "mode": "continue"}))
    assert "Continuing needs the same classes: this dataset has 5, the earlier model's 10" in other["pretrained_mode"]
    assert create(client, name="ft", dataset=five.pk,
                  pretrained={"job": earlier.pk, "file": "checkpoints/best.pt"}).status_code == 201


def test_train_jobs_are_not_created_through_the_jobs_endpoint(alice):
    response = signed_in(alice).post("/api/jobs", json.dumps({"kind": "train", "name": "x"}), content_type="application/json")
    assert response.status_code == 400
    assert response.json()["errors"]["kind"] == ["Create train jobs with POST /api/models."]


def test_the_speed_run_preset_fills_the_form_with_airbench94_in_mean_loss_terms(alice):
    from training.presets import SPEEDRUN

    cifar = dataset(alice, name="cifar", shape=(32, 32, 3), train=50_000)
    response = create(signed_in(alice), name="speed run", dataset=cifar.pk, **SPEEDRUN)
    assert response.status_code == 201, response.content
    params = Job.objects.get(pk=response.json()["jobs"][0]["id"]).params
    assert params["network"] == {"source": "standard", "name": "fastnet"}
    assert (params["epochs"], params["batch_size"], params["solver"], params["momentum"]) == (10, 1024, "nesterov", 0.85)
    # airbench: lr 11.5 and weight decay 0.0153 per 1,024 summed examples, over 1 + 1/(1 - 0.85).
    assert params["lr"] == pytest.approx(11.5 / (1 + 1 / 0.15))
    assert params["lr"] * params["weight_decay"] == pytest.approx(0.0153 / (1 + 1 / 0.15), rel=1e-5), \
        "the decay each step takes is airbench's"
    assert params["norm_bias_lr_scale"] == 64.0
    assert params["norm_bias_weight_decay"] * 64 == pytest.approx(params["weight_decay"], rel=1e-5)
    assert params["lr_policy"]["name"] == "linear"
    assert [params["lr_policy"][k] for k in ("start_factor", "peak_percent", "end_factor")] == [0.2, 23.0, 0.07]
    assert params["averaging"] == {"kind": "lookahead", "decay": 0.95, "every": 5}
    assert (params["tta"], params["flip"], params["translate"], params["whiten_bias_epochs"]) == (
        "mirror_translate", "alternating", 2, 3)
    assert (params["label_smoothing"], params["mean"]) == (0.2, "pixel")


def test_a_run_of_fewer_than_100_steps_is_warned_of_with_settings_that_make_100(alice):
    small = dataset(alice, name="photos", train=298)  # 398 photos, a quarter for validation
    client = signed_in(alice)
    fields = {"epochs": "2", "batch_size": "64", "dataset": str(small.pk), "lr": "0.01", "device": "cpu"}
    warning = ("This run takes only 8 steps (298 training images, batch size 64, 2 epochs), too few to learn much: "
               "a batch size of 5 or less, or 25 epochs, makes at least 100.")
    preview = client.post("/models/lr-preview", json.dumps(fields), content_type="application/json").json()
    assert preview["warning"] == warning
    created = create(client, name="few", dataset=small.pk, epochs=2)
    assert created.status_code == 201 and created.json()["warning"] == warning
    page = client.post("/models/new/", page_fields(name="few page", dataset=small.pk, epochs="2"), follow=True)
    assert warning in page.content.decode()

    enough = {**fields, "epochs": "30"}
    assert "warning" not in client.post("/models/lr-preview", json.dumps(enough), content_type="application/json").json()
    assert "warning" not in create(client, name="enough", dataset=small.pk, epochs=30).json()


@pytest.mark.parametrize("batch_sizes, runs", [(8, 64), (9, None)])
def test_a_sweep_makes_up_to_64_runs(batch_sizes, runs):
    """``MAX_COMBINATIONS`` (64): 8 learning rates × 8 batch sizes make 64
    runs, each of its own pair; 8 × 9 is refused."""
    lrs, sizes = [0.1 / 2**i for i in range(8)], [16 * (i + 1) for i in range(batch_sizes)]
    if runs is None:
        with pytest.raises(ValueError, match="72 combinations; a sweep has at most 64"):
            sweeps.expand("sw", {}, lrs, sizes)
        return
    made = sweeps.expand("sw", {}, lrs, sizes)
    assert len({(run.params["lr"], run.params["batch_size"]) for run in made}) == len(made) == runs


def made_params(response) -> list[dict]:
    assert response.status_code == 201, response.content
    return [Job.objects.get(pk=job["id"]).params for job in response.json()["jobs"]]


def test_a_detector_takes_its_score_threshold_and_shows_it_among_its_settings(alice, boxes):
    client = signed_in(alice)
    [params] = made_params(create(client, name="chosen", dataset=boxes.pk, network=DETECTOR, batch_size=2,
                                  score_threshold=0.3))
    assert params["score_threshold"] == 0.3
    chosen = Job.objects.get(name="chosen")
    page = html.unescape(client.get(f"/jobs/{chosen.pk}/").content.decode())
    assert "<td>Score threshold</td><td>0.3</td>" in page
    clone = client.post(f"/api/jobs/{chosen.pk}/clone")
    assert clone.status_code == 201 and Job.objects.get(pk=clone.json()["id"]).params["score_threshold"] == 0.3
    sweep = made_params(create(client, name="sweep", dataset=boxes.pk, network=DETECTOR, batch_size=2, lr=[0.1, 0.01],
                               score_threshold=0.25))
    assert [run["score_threshold"] for run in sweep] == [0.25, 0.25]


def test_a_detector_left_without_a_score_threshold_takes_the_default(alice, boxes):
    client = signed_in(alice)
    for blank in ({}, {"score_threshold": None}, {"score_threshold": ""}):
        [params] = made_params(create(client, name="default", dataset=boxes.pk, network=DETECTOR, batch_size=2, **blank))
        assert params["score_threshold"] == 0.5


@pytest.mark.parametrize("wrong", [1.5, -0.1, "high", "1e999", True, False])
def test_a_score_threshold_that_is_no_number_from_0_to_1_is_refused_by_its_field(alice, boxes, wrong):
    answer = create(signed_in(alice), name="d", dataset=boxes.pk, network=DETECTOR, batch_size=2, score_threshold=wrong)
    assert errors(answer) == {"score_threshold": "The score threshold is a number from 0 to 1."}


def test_a_classifier_refuses_the_score_threshold_of_detectors(alice, digits):
    client = signed_in(alice)
    assert errors(create(client, name="c", dataset=digits.pk, score_threshold=0.3)) == {
        "score_threshold": "A model for classification cannot use this yet: the score threshold is an option of "
                           "other tasks' models."}
    [params] = made_params(create(client, name="c", dataset=digits.pk))
    assert "score_threshold" not in params
    page = client.post("/models/new/", {**defaults(NewModelForm), "name": "c", "dataset": digits.pk,
                                        "score_threshold": "0.3"})
    assert page.status_code == 400 and "the score threshold is an option of other tasks&#x27; models" in \
        page.content.decode()


def test_the_page_shows_the_score_threshold_for_detection_datasets_alone(alice, digits, boxes):
    page = signed_in(alice).get("/models/new/")
    data = page.context["page_data"]
    assert data["run_options"] == ["score_threshold", "segmentation_loss"] and "score_threshold" not in data["initials"]
    assert data["tasks"]["detection"]["run_options"] == ["score_threshold"]
    assert data["tasks"]["classification"]["run_options"] == []
    field = page.content.decode().split('<p class="field" data-field="score_threshold">')[1].split("</p>")[0]
    assert 'min="0.0"' in field and 'max="1.0"' in field and "Blank: 0.5." in field
