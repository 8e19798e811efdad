"""Instance segmentation models on the web side: the New model form offers
an instance dataset Mask R-CNN and every augmentation its objects follow,
and refuses the rest with the reason; its backbone starts from a pretrained
classifier of its network; in a real browser with a real worker, a Mask
R-CNN trains from the New model page and its page charts mask mAP and its
losses, and offers Detect."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from jobs.models import Job, Status
from tests.browser import needs_chromium, sign_up
from tests.clients import signed_in
from tests.instancefiles import BUILD_CONFIG, built_shapes
from tests.training.test_model_form import create, errors, pretrained_model
from trainer import jobfiles, tasks

MOBILE = {"source": "standard", "name": "maskrcnn_mobilenet_v3_large_fpn"}


def shapes_dataset(owner, tmp_path, count: int = 16) -> Job:
    import shutil

    job = Job.objects.create(kind="dataset", name="shapes", owner=owner, status=Status.DONE, progress=1.0,
                             params={**BUILD_CONFIG, "width": 32, "height": 32,
                                     "source": {"type": "folder", "path": "/srv"}})
    shutil.copytree(built_shapes(tmp_path, count=count), job.folder / jobfiles.DATASET)
    return job


@pytest.fixture
def shapes(alice, tmp_path):
    return shapes_dataset(alice, tmp_path)


def test_the_page_offers_mask_rcnn_and_every_augmentation_the_objects_follow(alice, shapes):
    data = signed_in(alice).get("/models/new/").context["page_data"]
    assert data["dataset_tasks"][str(shapes.pk)] == "instance_segmentation"
    offered = data["tasks"]["instance_segmentation"]
    assert offered["networks"] == list(tasks.TASKS["instance_segmentation"].networks)
    assert offered["networks"][0] == "maskrcnn_mobilenet_v3_large_fpn"
    assert offered["sources"] == ["standard"] and offered["flips"] is None
    assert set(offered["refused"]) == {"tta", "label_smoothing", "compile"}


def test_an_instance_model_takes_its_networks_and_refuses_what_it_cannot_take(alice, shapes):
    client = signed_in(alice)
    assert errors(create(client, name="m", dataset=shapes.pk, network=MOBILE, batch_size=4, tta="mirror")) == {
        "tta": "A model for instance segmentation cannot use this yet: it is an option of classification's."}
    assert "is not a network for instance segmentation" in errors(create(
        client, name="m", dataset=shapes.pk, batch_size=4, network={"source": "standard", "name": "unet"}))[
        "standard_network"]
    made = create(client, name="masks", dataset=shapes.pk, network=MOBILE, batch_size=4, crop=24, flip="both",
                  rotation=5.0, scale=0.1, epochs=2)
    assert made.status_code == 201, made.content
    params = Job.objects.get(pk=made.json()["jobs"][0]["id"]).params
    assert (params["task"], params["network"], params["crop"], params["flip"], params["rotation"]) == (
        "instance_segmentation", MOBILE, 24, "both", 5.0)


def test_mask_rcnns_backbone_starts_from_a_pretrained_classifier_of_its_network(alice, shapes):
    resnet = pretrained_model(alice, "imagenet-ish", "resnet50")
    mobile = pretrained_model(alice, "phones", "mobilenet_v3")
    client = signed_in(alice)
    made = create(client, name="m", dataset=shapes.pk, batch_size=4, backbone_model=mobile.pk, network=MOBILE)
    assert made.status_code == 201, made.content
    assert Job.objects.get(pk=made.json()["jobs"][0]["id"]).params["pretrained"]["mode"] == "backbone"
    assert errors(create(client, name="m", dataset=shapes.pk, batch_size=4, backbone_model=resnet.pk,
                         network=MOBILE)) == {
        "backbone_model": "Mask R-CNN MobileNetV3-Large FPN's backbone starts from a MobileNetV3-Large classifier, "
                          "and this pretrained model is not one."}


@pytest.mark.one_database
@needs_chromium
def test_a_mask_rcnn_trains_from_the_new_model_page_and_its_page_charts_mask_map(page, worker, tmp_path):
    from playwright.sync_api import expect

    sign_up(page, "ross")
    shapes = shapes_dataset(User.objects.get(username="ross"), tmp_path)
    page.click("text=New model")
    page.fill("#id_batch_size", "4")
    page.select_option("#id_dataset", str(shapes.pk))
    expect(page.locator("#dataset-task")).to_have_text("A model for instance segmentation.")
    expect(page.locator("#id_standard_network")).to_have_value("maskrcnn_mobilenet_v3_large_fpn")
    expect(page.locator("#id_standard_network option[value=unet]")).to_be_disabled()
    expect(page.locator("p[data-field=tta]")).to_be_hidden()
    for shown in ("p[data-field=crop]", "p[data-field=rotation]", "p[data-field=scale]"):
        expect(page.locator(shown)).to_be_visible()
    page.fill("#id_name", "masks")
    page.fill("#id_epochs", "1")
    page.select_option("#id_solver", "adamw")
    page.fill("#id_lr", "0.002")
    page.click("text=Create model")
    page.wait_for_url("**/jobs/*/")
    expect(page.locator("#status")).to_have_text("Done", timeout=240_000)
    expect(page.locator("#training-result")).to_contain_text("mask mAP@0.5")
    names = page.evaluate("(document.getElementById('metrics-chart')?.data ?? []).map((trace) => trace.name)")
    assert any("mask mAP@0.5" in name for name in names), names
    expect(page.locator("#detect-one")).to_be_visible()
    expect(page.locator("#segment-one")).to_have_count(0)
