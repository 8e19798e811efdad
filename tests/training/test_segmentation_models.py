"""Segmentation models on the web side: the New model form offers a
segmentation dataset its networks and the options its masks can follow, and
refuses the rest with the reason; a torchvision segmenter's backbone starts
from a pretrained classifier of its network, and no other; in a real browser with a real worker, a
U-Net trains on a built dataset and its page charts mIoU."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from jobs.models import Job, Status
from tests.browser import needs_chromium, sign_up
from tests.clients import signed_in
from tests.segmentationfiles import BUILD_CONFIG, make_segmentation_dataset
from tests.training.test_model_form import create, dataset, errors, pretrained_model
from trainer import eventlog, jobfiles, tasks

UNET = {"source": "standard", "name": "unet"}


@pytest.fixture
def scenes(alice):
    job = Job.objects.create(kind="dataset", name="scenes", owner=alice, status=Status.DONE,
                             params={**BUILD_CONFIG, "source": {"type": "folder", "path": "/srv"}})
    make_segmentation_dataset(job.folder / jobfiles.DATASET, count=16)
    return job


def test_the_page_offers_segmentation_its_networks_and_the_options_its_masks_follow(alice, scenes):
    data = signed_in(alice).get("/models/new/").context["page_data"]
    assert data["dataset_tasks"][str(scenes.pk)] == "segmentation"
    offered = data["tasks"]["segmentation"]
    assert offered["networks"] == list(tasks.TASKS["segmentation"].networks) and offered["networks"][0] == "unet"
    assert offered["sources"] == ["standard"] and offered["flips"] is None
    assert {"tta", "label_smoothing"} == set(offered["refused"])


def test_a_segmentation_model_takes_its_networks_and_refuses_what_its_masks_cannot_follow(alice, scenes):
    client = signed_in(alice)
    refused = errors(create(client, name="s", dataset=scenes.pk, network=UNET, batch_size=4, tta="mirror"))
    assert refused == {"tta": "A model for semantic segmentation cannot use this yet: it is an option of "
                              "classification's."}
    assert "is not a network for semantic segmentation" in errors(create(
        client, name="s", dataset=scenes.pk, batch_size=4, network={"source": "standard", "name": "lenet"}))[
        "standard_network"]
    made = create(client, name="segmenter", dataset=scenes.pk, network=UNET, batch_size=4, crop=16, translate=2,
                  flip="both", rotation=5.0, scale=0.1, epochs=2)
    assert made.status_code == 201, made.content
    params = Job.objects.get(pk=made.json()["jobs"][0]["id"]).params
    assert (params["task"], params["network"], params["crop"], params["flip"]) == ("segmentation", UNET, 16, "both")
    assert (params["rotation"], params["scale"]) == (5.0, 0.1), "the masks follow rotation and zoom"
    assert params["segmentation_loss"] == "cross_entropy"  # the default, left blank
    assert errors(create(client, name="s", dataset=scenes.pk, network=UNET, batch_size=4,
                         segmentation_loss="focal")) == {
        "segmentation_loss": "The loss is one of: cross_entropy, weighted_cross_entropy, dice, cross_entropy_dice."}
    weighted = create(client, name="w", dataset=scenes.pk, network=UNET, batch_size=4, segmentation_loss="dice")
    assert Job.objects.get(pk=weighted.json()["jobs"][0]["id"]).params["segmentation_loss"] == "dice"


def test_a_segmenters_backbone_starts_from_a_pretrained_classifier_of_its_network(alice, scenes):
    resnet = pretrained_model(alice, "imagenet-ish", "resnet50")
    mobile = pretrained_model(alice, "phones", "mobilenet_v3")
    client = signed_in(alice)
    networks = client.get("/models/new/").context["page_data"]["networks"]
    assert {name: networks[name]["backbone"] for name in tasks.TASKS["segmentation"].networks} == {
        "unet": None, "lraspp_mobilenet_v3_large": "mobilenet_v3", "deeplabv3_mobilenet_v3_large": "mobilenet_v3",
        "deeplabv3_resnet50": "resnet50", "fcn_resnet50": "resnet50"}
    for network, chosen in (("lraspp_mobilenet_v3_large", mobile), ("fcn_resnet50", resnet)):
        made = create(client, name="s", dataset=scenes.pk, batch_size=4, backbone_model=chosen.pk,
                      network={"source": "standard", "name": network})
        assert made.status_code == 201, made.content
        params = Job.objects.get(pk=made.json()["jobs"][0]["id"]).params
        assert params["pretrained"] == {"job": chosen.pk, "path": str(chosen.folder / jobfiles.PRETRAINED_WEIGHTS),
                                        "mode": "backbone"}
    assert errors(create(client, name="s", dataset=scenes.pk, batch_size=4, backbone_model=resnet.pk,
                         network={"source": "standard", "name": "deeplabv3_mobilenet_v3_large"})) == {
        "backbone_model": "DeepLabV3 MobileNetV3-Large's backbone starts from a MobileNetV3-Large classifier, and "
                          "this pretrained model is not one."}
    assert errors(create(client, name="s", dataset=scenes.pk, batch_size=4, backbone_model=mobile.pk,
                         network=UNET)) == {
        "backbone_model": "U-Net (small) has no backbone that starts from a pretrained model; leave Backbone weights "
                          "blank."}


def test_a_classifier_refuses_the_loss_of_segmenters(alice):
    digits = dataset(alice)
    refused = errors(create(signed_in(alice), name="c", dataset=digits.pk, segmentation_loss="dice"))
    assert refused["segmentation_loss"].endswith("the loss is an option of other tasks' models.")


@pytest.mark.one_database
@needs_chromium
def test_a_unet_trains_from_the_new_model_page_and_its_page_charts_miou(page, worker):
    from playwright.sync_api import expect

    sign_up(page, "ross")
    scenes = Job.objects.create(kind="dataset", name="scenes", owner=User.objects.get(username="ross"),
                                status=Status.DONE, params={**BUILD_CONFIG, "source": {"type": "folder", "path": "/srv"}})
    make_segmentation_dataset(scenes.folder / jobfiles.DATASET, count=16)
    page.click("text=New model")
    page.fill("#id_batch_size", "4")
    page.select_option("#id_dataset", str(scenes.pk))
    expect(page.locator("#dataset-task")).to_have_text("A model for semantic segmentation.")
    expect(page.locator("#id_standard_network")).to_have_value("unet")
    expect(page.locator("#id_standard_network option[value=lenet]")).to_be_disabled()
    expect(page.locator("p[data-field=tta]")).to_be_hidden()
    for shown in ("p[data-field=crop]", "p[data-field=rotation]", "p[data-field=scale]"):
        expect(page.locator(shown)).to_be_visible()
    page.fill("#id_name", "segmenter")
    page.fill("#id_epochs", "2")
    page.select_option("#id_solver", "adamw")
    page.fill("#id_lr", "0.01")
    page.select_option("#id_flip", "horizontal")
    expect(page.locator("p[data-field=segmentation_loss]")).to_be_visible()
    page.select_option("#id_segmentation_loss", "cross_entropy_dice")
    page.click("text=Create model")
    page.wait_for_url("**/jobs/*/")
    expect(page.locator("#status")).to_have_text("Done", timeout=180_000)
    expect(page.locator("#training-result")).to_contain_text("mIoU")
    result = [event["data"] for event in eventlog.Reader(Job.objects.get(kind="train", name="segmenter").folder).read()
              if event["kind"] == "result"][-1]
    rows = page.locator("#training-per-class-table tbody tr")
    expect(rows).to_have_count(len(result["per_class"]["val"]))
    for number, row in enumerate(result["per_class"]["val"]):
        iou = "—" if row["iou"] is None else f"{row['iou'] * 100:.1f}%"
        expect(rows.nth(number).locator("td[data-field=iou]")).to_have_text(iou)
        expect(rows.nth(number).locator("td").first).to_have_text(row["class"])
    expect(page.locator("#training-per-class-table thead")).to_contain_text("IoU (validation)")
    names = page.evaluate("(document.getElementById('metrics-chart')?.data ?? []).map((trace) => trace.name)")
    assert any("mIoU" in name for name in names), names
    params = Job.objects.get(kind="train", name="segmenter").params
    assert (params["task"], params["network"], params["segmentation_loss"]) == ("segmentation", UNET,
                                                                                "cross_entropy_dice")
