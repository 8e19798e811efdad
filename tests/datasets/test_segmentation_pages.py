"""Semantic segmentation datasets on the web side: the New dataset form and
API refuse each bad input with its message and make the build's params; a
built dataset's section (how its labels were read, pixel shares, images per
class), its gallery's masks and the mask images; the end to end build from
an uploaded archive with a real worker."""

from __future__ import annotations

import html
import io
import json
import zipfile

import numpy as np
import pytest
from django.test import Client
from PIL import Image

from datasets import services
from datasets.forms import defaults
from datasets.segmentation_form import SegmentationDatasetForm
from jobs.models import Job, Status
from tests.jobtools import wait_status
from tests.segmentationfiles import BUILD_CONFIG, CLASSES, colour_png, make_segmentation_dataset, png, scene


@pytest.fixture
def roots(tmp_path, settings):
    root = tmp_path / "imports"
    (root / "scenes" / "images").mkdir(parents=True)
    settings.DATASET_ROOTS = [str(root)]
    return root


@pytest.fixture
def client(alice):
    client = Client()
    client.force_login(alice)
    return client


def create(client, **fields):
    return client.post("/api/datasets", data=json.dumps({"name": "scenes", "task": "segmentation", **fields}),
                       content_type="application/json")


@pytest.fixture
def built(alice):
    """A done segmentation dataset job with its built folder, and the masks its source held."""
    job = Job.objects.create(kind="dataset", name="scenes", owner=alice, status=Status.DONE, progress=1.0,
                             params={**BUILD_CONFIG, "source": {"type": "folder", "path": "/srv/scenes"}})
    made = make_segmentation_dataset(services.folder(job))
    return job, made


@pytest.mark.parametrize("fields, field, message", [
    ({"colour_map": "255 0\n"}, "colour_map", "Line 1 (“255 0”) does not start with three numbers from 0 to 255 (red, "
                                              "green, blue)."),
    ({"colour_map": "0 0 0 a\n0 0 0 b\n"}, "colour_map", "Line 2 gives the colour 0 0 0 again (first on line 1)."),
    ({"colour_map": "0 0 300 a"}, "colour_map", "Line 1 (“0 0 300 a”) does not start with three numbers from 0 to 255 "
                                                "(red, green, blue)."),
    ({"label_type": "colours"}, "colour_map", "Label images in colour need a colour map: a line a class, “red green "
                                              "blue name”."),
    ({"class_names": "cat\n\ndog"}, "class_names", "Line 2 of the class names is blank: give every class a name, in "
                                                   "order."),
    ({"class_names": "\n".join(f"c{n}" for n in range(256))}, "class_names", "256 classes are named; a dataset holds "
                                                                             "at most 255."),
    ({"ignore_value": 256}, "ignore_value", "The ignore value is a pixel value from 0 to 255."),
    ({"ignore_value": -1}, "ignore_value", "The ignore value is a pixel value from 0 to 255."),
    ({"ignore_value": "x"}, "ignore_value", "Enter a whole number."),
    ({"binary": "maybe"}, "binary", "“maybe” is not a choice: auto, foreground or ignore."),
    ({"layout": "kitti"}, "layout", "“kitti” is not a layout: the layouts are auto, folders, voc, coco."),
    ({"label_type": "rgb"}, "label_type", "“rgb” is not a label type: the types are auto, values and colours."),
    ({"pad_width": 640}, "pad_height", "Give both padding sides, width and height, or neither."),
    ({"folder": ""}, "folder", "Give the folder of images and label images."),
    ({"folder": "imports/none"}, "folder", "imports/none is not a folder."),
    ({"source": "archive", "folder": ""}, "archive", "Choose an archive to upload."),
])
def test_each_bad_input_is_refused_with_its_message_by_the_api_and_the_page(client, roots, fields, field, message):
    fields = {"source": "folder", "folder": "imports/scenes", **fields}
    response = create(client, **fields)
    assert response.status_code == 400
    assert [e["message"] for e in response.json()["errors"][field]] == [message]
    untouched = {k: v for k, v in defaults(SegmentationDatasetForm).items() if v is not False}
    page = client.post("/datasets/new/", {**untouched, "name": "scenes", "task": "segmentation", **fields})
    assert page.status_code == 400 and message in html.unescape(page.content.decode())
    assert "New semantic segmentation dataset" in page.content.decode()
    assert not Job.objects.exists()


def test_a_folder_makes_the_builds_params(client, roots):
    response = create(client, folder=str(roots / "scenes"), label_type="colours",
                      colour_map="0 0 0 sky\n200 30 30 road\n255 255 255 ignore", ignore_value="", layout="folders",
                      label_folder=" masks ", pad_width=80, pad_height=60)
    assert response.status_code == 201, response.json()
    params = Job.objects.get(pk=response.json()["id"]).params
    assert params["task"] == "segmentation" and params["source"] == {"type": "folder", "path": str(roots / "scenes")}
    assert {k: params[k] for k in ("layout", "image_folder", "label_folder", "label_type", "ignore_value", "binary",
                                   "class_names", "placing")} == {
        "layout": "folders", "image_folder": "", "label_folder": "masks", "label_type": "colours", "ignore_value": None,
        "binary": "auto", "class_names": "", "placing": {"pad_width": 80, "pad_height": 60}}
    assert params["colour_map"].startswith("0 0 0 sky")


def test_the_new_page_offers_segmentation_with_its_fields(client):
    page = client.get("/datasets/new/?task=segmentation").content.decode()
    assert "New semantic segmentation dataset" in page and 'name="task" value="segmentation"' in page
    for field in ("layout", "label_type", "colour_map", "class_names", "ignore_value", "binary"):
        assert f'name="{field}"' in page
    assert "Semantic segmentation" in client.get("/datasets/new/").content.decode()  # the tab


def test_the_section_shows_how_labels_were_read_and_the_pixels_per_class(client, built):
    job, made = built
    page = html.unescape(client.get(f"/jobs/{job.pk}/").content.decode())
    assert 'id="pixel-statistics"' in page and 'id="class-pixels"' in page and 'id="share-chart"' in page
    assert "values (palette indices or gray levels)" in page
    context = client.get(f"/jobs/{job.pk}/").context
    splits = context["mask_splits"]
    assert splits == ["train", "val"]
    all_masks = {split: np.asarray(services.reader(job, split, services.manifest(job)).targets) for split in splits}
    for name, _, per_split in context["class_rows"]:
        index = CLASSES.index(name)
        for split, (share, images) in zip(splits, per_split, strict=True):
            masks = all_masks[split]
            assert images == int((masks == index).any(axis=(1, 2)).sum())
            assert share == f"{(masks == index).sum() / (masks != 255).sum():.1%}"
    assert context["class_rows"][1][1] == "#800000"  # VOC's colour of class 1, from the palette PNGs
    assert dict(context["labelling_rows"])["Ignored"] == "255"


def test_the_gallery_carries_the_colours_and_each_mask_is_served_as_its_classes(client, built):
    job, made = built
    response = client.get(f"/datasets/{job.pk}/explore?split=train")
    masks = response.context["masks"]
    assert masks["classes"] == list(CLASSES) and masks["colours"][:2] == ["#000000", "#800000"]
    assert (masks["width"], masks["height"]) == (32, 24)
    assert masks["mask_url"] == f"/datasets/{job.pk}/masks/train/{{index}}.png"
    page = response.content.decode()
    assert 'id="mask-opacity"' in page and page.count('class="masked"') == 6
    stored = services.reader(job, "train", services.manifest(job)).targets
    for index in range(len(stored)):
        got = client.get(f"/datasets/{job.pk}/masks/train/{index}.png")
        assert got["Content-Type"] == "image/png"
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(got.content))), stored[index])
    assert client.get(f"/datasets/{job.pk}/masks/train/99.png").status_code == 404
    assert client.get(f"/datasets/{job.pk}/masks/nope/0.png").status_code == 404


def test_the_class_filter_shows_the_images_whose_mask_has_that_class(client, built):
    job, _ = built
    stored = np.asarray(services.reader(job, "train", services.manifest(job)).targets)
    response = client.get(f"/datasets/{job.pk}/explore?split=train&class=2")
    assert [item["index"] for item in response.context["items"]] == np.flatnonzero((stored == 2).any(axis=(1, 2))).tolist()
    labels = [item["label"] for item in client.get(f"/datasets/{job.pk}/explore?split=train").context["items"]]
    assert all(label.startswith("background") for label in labels)


def test_a_detection_or_classification_dataset_serves_no_mask(client, alice):
    from tests.detectionfiles import make_detection_dataset

    job = Job.objects.create(kind="dataset", name="boxes", owner=alice, status=Status.DONE, progress=1.0)
    make_detection_dataset(services.folder(job))
    assert client.get(f"/datasets/{job.pk}/masks/train/0.png").status_code == 404


def scenes_zip(path) -> bytes:
    """Five VOC-style scenes with colour labels, one of them not its image's size."""
    with zipfile.ZipFile(path, "w") as archive:
        for number in range(5):
            pixels, classes = scene(number, border=1)
            archive.writestr(f"scenes/images/{number}.png", png(pixels))
            label = colour_png(classes if number != 3 else classes[:20])
            archive.writestr(f"scenes/labels/{number}.png", label)
    return path


def test_an_uploaded_archive_of_colour_labels_builds_explores_and_reports(client, worker, tmp_path):
    with open(scenes_zip(tmp_path / "scenes.zip"), "rb") as handle:
        response = client.post("/api/datasets", {
            "task": "segmentation", "name": "scenes", "source": "archive", "archive": handle, "width": 32,
            "height": 24, "val_percent": 0, "test_percent": 0, "encoding": "png",
            "colour_map": "0 0 0 ground\n200 30 30 disc\n30 200 30 box\n255 255 255 ignore"})
    assert response.status_code == 201, response.json()
    job = wait_status(Job.objects.get(pk=response.json()["id"]), Status.DONE, Status.FAILED, timeout=60)
    assert job.status == Status.DONE, job.error
    info = client.get(f"/api/datasets/{job.pk}").json()["manifest"]
    assert info["task"] == "segmentation" and info["classes"] == ["ground", "disc", "box"]
    assert info["splits"]["train"]["count"] == 4 and info["skipped"]["total"] == 1
    page = html.unescape(client.get(f"/jobs/{job.pk}/").content.decode())
    assert "label image labels/3.png is 64×20, its image 64×48" in page and "colours, by the colour map" in page
    mask = client.get(f"/datasets/{job.pk}/masks/train/0.png")
    assert set(np.unique(np.asarray(Image.open(io.BytesIO(mask.content))))) <= {0, 1, 2, 255}


def test_an_uploaded_coco_archive_builds_its_masks_from_the_annotations(client, worker, tmp_path):
    from tests.trainer.test_segmentation_coco import coco_source

    coco_source(tmp_path / "source")
    archive = tmp_path / "coco.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path in sorted((tmp_path / "source").rglob("*")):
            if path.is_file():
                out.write(path, f"coco/{path.relative_to(tmp_path / 'source')}")
    with open(archive, "rb") as handle:
        response = client.post("/api/datasets", {
            "task": "segmentation", "name": "shapes", "source": "archive", "archive": handle, "width": 40,
            "height": 30, "val_percent": 0, "test_percent": 0, "encoding": "png"})
    assert response.status_code == 201, response.json()
    job = wait_status(Job.objects.get(pk=response.json()["id"]), Status.DONE, Status.FAILED, timeout=60)
    assert job.status == Status.DONE, job.error
    info = client.get(f"/api/datasets/{job.pk}").json()["manifest"]
    assert info["classes"] == ["background", "disc", "box"] and info["splits"]["train"]["count"] == 3
    context = client.get(f"/jobs/{job.pk}/").context
    assert dict(context["labelling_rows"]) == {"Layout": "COCO JSON", "Ignored": "crowd regions",
                                               "Label images hold": "COCO polygons and RLEs, drawn (crowd regions "
                                                                    "ignored)"}
    page = html.unescape(client.get(f"/jobs/{job.pk}/").content.decode())
    assert "annotation 5: it has no segmentation (polygons or an RLE) to draw its mask from" in page
    mask = client.get(f"/datasets/{job.pk}/masks/train/0.png")
    assert set(np.unique(np.asarray(Image.open(io.BytesIO(mask.content))))) <= {0, 1, 2, 255}
