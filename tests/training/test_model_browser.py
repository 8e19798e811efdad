"""In a real browser: configure a model, start it, and watch its charts grow."""

import re

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from jobs.models import Job
from tests.browser import needs_chromium, sign_up
from tests.processes import wait_for
from trainer import jobfiles
from training import networkinfo

pytestmark = needs_chromium

# Customize and Visualize answer from a subprocess that imports torch: on a loaded machine that takes
# as long as the product lets it (a place in its queue, then its time limit), and no longer.
NETWORK_ANSWER_MS = (networkinfo.QUEUE_SECONDS + settings.INSPECT_TIMEOUT_SECONDS + 10) * 1000


@pytest.mark.one_database
def test_configure_a_model_start_it_and_watch_its_charts_grow(page, worker):
    from playwright.sync_api import expect

    from tests.trainer.test_train import SLOW_LENET
    from tests.trainfiles import make_dataset

    sign_up(page, "ada")
    owner = User.objects.get(username="ada")
    dataset = Job.objects.create(kind="dataset", name="bars", owner=owner, status="done")
    make_dataset(dataset.folder / jobfiles.DATASET)

    page.click("text=New model")
    page.select_option("#id_dataset", str(dataset.pk))
    page.fill("#id_name", "slow lenet")
    page.fill("#id_epochs", "4")
    page.fill("#id_lr", "0.1")
    page.select_option("#id_solver", "nesterov")
    page.select_option("#id_lr_policy", "cosine")
    expect(page.locator("#lr-chart .main-svg").first).to_be_visible(timeout=20_000)
    expect(page.locator("#lr-description")).to_contain_text("cosine")

    page.click("#customize")  # LeNet into the layer editor
    expect(page.locator("#id_network_source_layers")).to_be_checked(timeout=NETWORK_ANSWER_MS)
    expect(page.locator("#id_layers_text")).to_have_value(re.compile("conv"))
    page.check("#id_network_source_python")
    page.fill("#id_python_text", SLOW_LENET)
    page.click("#visualize")
    expect(page.locator("#visualize")).to_have_text("Visualize", timeout=NETWORK_ANSWER_MS)  # answered
    expect(page.locator("#network-error")).to_be_hidden()
    expect(page.locator("#network-table")).to_contain_text("Conv2d")
    expect(page.locator("#network-table")).to_contain_text("428,074")  # LeNet for 4 classes

    page.click("text=Create model")
    page.wait_for_url("**/jobs/*/")
    page.evaluate("window.notReloaded = true")
    expect(page.locator("#status")).to_have_text("Running", timeout=30_000)
    # Polled from here: Playwright's wait_for_function compiles its predicate
    # with eval, which the app's Content-Security-Policy refuses.
    points = "document.getElementById('metrics-chart').data?.[0]?.x?.length ?? 0"
    first = wait_for(lambda: page.evaluate(points), timeout=60, what="the first points of the metrics chart")
    wait_for(lambda: page.evaluate(points) > first, timeout=60, what="the chart to grow while it trains")
    expect(page.locator("#snapshots-table tbody tr").first).to_be_visible(timeout=60_000)
    expect(page.locator("#status")).to_have_text("Done", timeout=90_000)
    expect(page.locator("#training-result")).to_contain_text("top-1")
    expect(page.locator("#snapshots-table tbody tr")).to_have_count(4)
    expect(page.locator("#filters-image")).to_be_visible()
    expect(page.locator("#download-export")).to_be_visible()  # what the run's end brings, live
    assert page.evaluate("window.notReloaded") is True


def test_the_speed_run_preset_fills_the_form_and_creates_that_model(page):
    from playwright.sync_api import expect

    from tests.trainfiles import make_dataset
    from training.presets import SPEEDRUN

    sign_up(page, "keller")
    owner = User.objects.get(username="keller")
    dataset = Job.objects.create(kind="dataset", name="bars", owner=owner, status="done")
    make_dataset(dataset.folder / jobfiles.DATASET, per_class={"train": 300, "val": 10, "test": 10})

    page.click("text=New model")
    page.select_option("#id_dataset", str(dataset.pk))
    page.fill("#id_name", "speed run")
    page.click("button[data-preset=speedrun]")
    expect(page.locator("#id_standard_network")).to_have_value("fastnet")
    expect(page.locator("#id_lr_policy")).to_have_value("linear")
    expect(page.locator("#id_start_factor")).to_be_visible()
    expect(page.locator("#id_average_decay")).to_be_visible()
    for name, value in SPEEDRUN.items():
        if name in ("network_source", "crop", "batch_schedule"):
            continue
        shown = page.locator(f"#id_{name}").input_value()
        assert (float(shown) == float(value)) if isinstance(value, int | float) else shown == value, (name, shown)
    expect(page.locator("#id_network_source_standard")).to_be_checked()
    expect(page.locator("#lr-description")).to_contain_text("linear: 0.3 up to 1.5", timeout=20_000)

    page.click("text=Create model")
    page.wait_for_url("**/jobs/*/")
    params = Job.objects.get(kind="train", name="speed run").params
    assert params["averaging"] == {"kind": "lookahead", "decay": 0.95, "every": 5}
    assert (params["lr"], params["norm_bias_lr_scale"], params["tta"]) == (1.5, 64.0, "mirror_translate")


def signed_up_with_both_datasets(page) -> tuple[User, Job, Job]:
    """ross, signed up in ``page``, with a built detection dataset and a built classification one."""
    from tests.detectionfiles import make_detection_dataset
    from tests.trainfiles import make_dataset

    sign_up(page, "ross")
    owner = User.objects.get(username="ross")
    boxes = Job.objects.create(kind="dataset", name="boxes", owner=owner, status="done")
    make_detection_dataset(boxes.folder / jobfiles.DATASET)
    bars = Job.objects.create(kind="dataset", name="bars", owner=owner, status="done")
    make_dataset(bars.folder / jobfiles.DATASET)
    return owner, boxes, bars


@pytest.mark.one_database
def test_a_detection_dataset_offers_detectors_alone_and_its_run_charts_each_part_of_the_loss(page, worker):
    from playwright.sync_api import expect

    from tests.training.test_model_form import pretrained_model

    owner, boxes, bars = signed_up_with_both_datasets(page)
    phones = pretrained_model(owner, "phones", "mobilenet_v3")
    resnet = pretrained_model(owner, "big", "resnet50")

    page.click("text=New model")
    # First: the default batch of 64 is more than the 4 training images of
    # the detection dataset, which the preview rightly refuses (a 400).
    page.fill("#id_batch_size", "2")
    page.select_option("#id_dataset", str(boxes.pk))
    expect(page.locator("#dataset-task")).to_have_text("A model for object detection.")
    expect(page.locator("#id_standard_network")).to_have_value("fasterrcnn_mobilenet_v3_large_fpn")
    expect(page.locator("#id_standard_network option[value=lenet]")).to_be_disabled()
    for hidden in ("p[data-field=crop]", "p[data-field=rotation]", "p[data-field=tta]", "p[data-field=label_smoothing]",
                   "#customize", "button[data-preset=speedrun]", "#id_network_source_layers"):
        expect(page.locator(hidden)).to_be_hidden()
    expect(page.locator("#id_flip option[value=both]")).to_be_disabled()
    expect(page.locator("#id_backbone_model")).to_be_visible()  # Faster R-CNN MobileNetV3's backbone
    expect(page.locator(f"#id_backbone_model option[value='{phones.pk}']")).to_be_enabled()
    expect(page.locator(f"#id_backbone_model option[value='{resnet.pk}']")).to_be_disabled()
    page.select_option("#id_standard_network", "ssd300_vgg16")
    expect(page.locator("p[data-field=backbone_model]")).to_be_hidden()
    page.select_option("#id_standard_network", "fasterrcnn_mobilenet_v3_large_fpn")

    page.select_option("#id_dataset", str(bars.pk))  # a classification dataset: everything again
    expect(page.locator("#id_standard_network option[value=lenet]")).to_be_enabled()
    expect(page.locator("p[data-field=crop]")).to_be_visible()
    expect(page.locator("button[data-preset=speedrun]")).to_be_visible()
    page.select_option("#id_standard_network", "lenet")

    page.select_option("#id_dataset", str(boxes.pk))
    expect(page.locator("#id_standard_network")).to_have_value("fasterrcnn_mobilenet_v3_large_fpn")
    page.fill("#id_name", "detector")
    page.fill("#id_epochs", "2")
    page.select_option("#id_solver", "adamw")
    page.fill("#id_lr", "0.001")
    page.select_option("#id_mean", "none")  # the small dataset was written without a mean image
    page.select_option("#id_flip", "horizontal")
    page.select_option("#id_backbone_model", "")  # the small pretrained rows hold no weights
    page.click("#visualize")
    expect(page.locator("#visualize")).to_have_text("Visualize", timeout=NETWORK_ANSWER_MS)  # answered
    expect(page.locator("#network-error")).to_be_hidden()
    expect(page.locator("#network-table")).to_contain_text("roi_heads.box_predictor.cls_score")

    page.click("text=Create model")
    page.wait_for_url("**/jobs/*/")
    expect(page.locator("#status")).to_have_text("Done", timeout=180_000)
    expect(page.locator("#training-result")).to_contain_text("mAP@0.5")
    names = page.evaluate("(document.getElementById('components-chart').data ?? []).map((trace) => trace.name)")
    assert names == ["classification (box head)", "box regression (box head)", "objectness (proposals)",
                     "box regression (proposals)"]
    params = Job.objects.get(kind="train", name="detector").params
    assert (params["task"], params["flip"], params["crop"]) == ("detection", "horizontal", None)


def test_the_score_threshold_is_offered_for_a_detection_dataset_alone(page):
    """No worker runs: the model made stays queued."""
    from playwright.sync_api import expect

    _, boxes, bars = signed_up_with_both_datasets(page)

    page.click("text=New model")
    # The learning rate preview of the detection dataset's few images refuses
    # the default batch (a 400 in the console): the batch comes first.
    page.fill("#id_batch_size", "2")
    threshold = page.locator("p[data-field=score_threshold]")
    expect(threshold).to_be_hidden()  # no dataset chosen yet
    page.select_option("#id_dataset", str(boxes.pk))
    expect(threshold).to_be_visible()
    expect(threshold).to_contain_text("Blank: 0.5.")
    page.fill("#id_score_threshold", "0.25")
    page.select_option("#id_dataset", str(bars.pk))
    expect(threshold).to_be_hidden()
    expect(page.locator("#id_score_threshold")).to_have_value("")  # not sent with a classifier
    page.select_option("#id_dataset", str(boxes.pk))
    expect(threshold).to_be_visible()
    page.fill("#id_score_threshold", "0.25")
    page.fill("#id_name", "detector")
    page.select_option("#id_mean", "none")  # the small dataset was written without a mean image
    page.click("text=Create model")
    page.wait_for_url("**/jobs/*/")
    expect(page.locator("#settings-table")).to_contain_text("Score threshold")
    assert Job.objects.get(kind="train", name="detector").params["score_threshold"] == 0.25
