"""Instance segmentation datasets on the web side: the New dataset form and
API refuse each bad input with its message and make the build's params; an
uploaded VOC archive built by a real worker, its section (objects per split
and class, their sizes), its gallery of masks, filtered by class."""

from __future__ import annotations

import html
import io
import json
import shutil
import zipfile

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client
from PIL import Image

from datasets.forms import defaults
from datasets.instance_form import InstanceDatasetForm
from jobs.models import Job, Status
from tests.browser import needs_chromium, sign_up
from tests.instancefiles import BUILD_CONFIG, VOC_VALUES, coco_source, voc_source
from tests.jobtools import wait_status
from trainer import jobfiles
from trainer.dataset_build import main as build_dataset
from trainer.instances.targets import INSTANCE, SHOWN_CROWD, SHOWN_NONE, Instances
from trainer.segmentation.labels import VOC_CLASSES


@pytest.fixture
def roots(tmp_path, settings):
    root = tmp_path / "imports"
    (root / "voc").mkdir(parents=True)
    settings.DATASET_ROOTS = [str(root)]
    return root


@pytest.fixture
def client(alice):
    client = Client()
    client.force_login(alice)
    return client


def create(client, **fields):
    return client.post("/api/datasets", data=json.dumps({"name": "shapes", "task": "instance_segmentation", **fields}),
                       content_type="application/json")


@pytest.mark.parametrize("fields, field, message", [
    ({"layout": "folders"}, "layout", "“folders” is not a layout: the layouts are auto, coco, voc."),
    ({"pad_width": 640}, "pad_height", "Give both padding sides, width and height, or neither."),
    ({"folder": ""}, "folder", "Give the folder of images and their annotations."),
    ({"folder": "imports/none"}, "folder", "imports/none is not a folder."),
    ({"source": "archive", "folder": ""}, "archive", "Choose an archive to upload."),
])
def test_each_bad_input_is_refused_with_its_message_by_the_api_and_the_page(client, roots, fields, field, message):
    fields = {"source": "folder", "folder": "imports/voc", **fields}
    response = create(client, **fields)
    assert response.status_code == 400
    assert [e["message"] for e in response.json()["errors"][field]] == [message]
    untouched = {k: v for k, v in defaults(InstanceDatasetForm).items() if v is not False}
    page = client.post("/datasets/new/", {**untouched, "name": "shapes", "task": "instance_segmentation", **fields})
    assert page.status_code == 400 and message in html.unescape(page.content.decode())
    assert "New instance segmentation dataset" in page.content.decode()
    assert not Job.objects.exists()


def test_a_folder_makes_the_builds_params(client, roots):
    response = create(client, folder=str(roots / "voc"), layout="voc", pad_width=80, pad_height=60)
    assert response.status_code == 201, response.json()
    params = Job.objects.get(pk=response.json()["id"]).params
    assert params["task"] == "instance_segmentation" and params["layout"] == "voc"
    assert params["source"] == {"type": "folder", "path": str(roots / "voc")}
    assert params["placing"] == {"pad_width": 80, "pad_height": 60}


def test_the_new_page_offers_instance_segmentation_with_its_layouts(client):
    page = client.get("/datasets/new/?task=instance_segmentation").content.decode()
    assert "New instance segmentation dataset" in page and 'name="task" value="instance_segmentation"' in page
    assert 'name="layout"' in page and "SegmentationObject" in page
    assert "Instance segmentation" in client.get("/datasets/new/").content.decode()  # the tab


def test_an_uploaded_voc_archive_is_built_with_its_objects_shown_counted_and_filtered(client, worker, tmp_path):
    made = voc_source(tmp_path / "voc", 12)
    archive = tmp_path / "voc.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path in sorted((tmp_path / "voc").rglob("*")):
            if path.is_file():
                out.write(path, f"VOC2012/{path.relative_to(tmp_path / 'voc')}")
    with open(archive, "rb") as handle:
        response = client.post("/api/datasets", {
            "task": "instance_segmentation", "name": "shapes", "source": "archive", "archive": handle, "width": 64,
            "height": 48, "val_percent": 25, "test_percent": 0, "encoding": "png"})
    assert response.status_code == 201, response.json()
    job = wait_status(Job.objects.get(pk=response.json()["id"]), Status.DONE, Status.FAILED, timeout=60)
    assert job.status == Status.DONE, job.error
    info = client.get(f"/api/datasets/{job.pk}").json()["manifest"]
    assert info["classes"] == list(VOC_CLASSES[1:]) and info["splits"]["train"]["count"] == 9

    context = client.get(f"/jobs/{job.pk}/").context
    assert context["object_splits"] == ["train", "val"] and context["layout"].startswith("Pascal VOC")
    rows = dict(context["object_rows"])
    objects = sum(len(found) for found in made.values())
    assert rows["Images"] == [9, 3] and sum(rows["Objects"]) == objects
    per_class = {name: per_split for name, _, per_split in context["class_rows"]}
    for shape, value in VOC_VALUES.items():
        assert sum(split[0] for split in per_class[VOC_CLASSES[value]]) == sum(
            1 for found in made.values() for name, _ in found if name == shape)
    assert per_class["aeroplane"] == [(0, 0, "0.0%"), (0, 0, "0.0%")]
    sizes = next(h for h in context["histograms"] if h["title"].startswith("Object size"))
    assert sum(sum(counts) for _, counts in sizes["rows"]) == objects
    page = html.unescape(client.get(f"/jobs/{job.pk}/").content.decode())
    assert 'id="object-statistics"' in page and 'id="object-chart"' in page

    cat = VOC_CLASSES.index("cat") - 1  # the discs: VOC's class value 8, stored as class 7
    gallery = client.get(f"/datasets/{job.pk}/explore?split=train&class={cat}")
    assert gallery.status_code == 200 and gallery.context["items"]
    assert all("cat" in item["label"] for item in gallery.context["items"])
    mask = client.get(f"/datasets/{job.pk}/masks/train/{gallery.context['items'][0]['index']}.png")
    drawn = np.asarray(Image.open(io.BytesIO(mask.content)))
    assert drawn.shape == (48, 64, 3) and not drawn[..., 2].any()
    assert cat in set(np.unique(drawn[..., 0]).tolist()) <= {cat, VOC_VALUES["box"] - 1, SHOWN_NONE, SHOWN_CROWD}
    assert ((drawn[..., 1] > 0) == (drawn[..., 0] != SHOWN_NONE)).all(), "an object number wherever a class is"


def outline_pixels(numbers: np.ndarray) -> int:
    """The pixels of an object with a 4-neighbour of another value, or on the image's edge."""
    padded = np.pad(numbers.astype(np.int16), 1, constant_values=-1)
    centre = padded[1:-1, 1:-1]
    differs = ((padded[:-2, 1:-1] != centre) | (padded[2:, 1:-1] != centre) | (padded[1:-1, :-2] != centre)
               | (padded[1:-1, 2:] != centre))
    return int((differs & (numbers > 0)).sum())


@needs_chromium
def test_the_gallery_outlines_each_object_solid_over_its_classes_fill(page, tmp_path):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    job = Job.objects.create(kind="dataset", name="shapes", owner=User.objects.get(username="ada"),
                             status=Status.DONE, progress=1.0, params={**BUILD_CONFIG, "source": {"type": "folder",
                                                                                                   "path": "/srv"}})
    coco_source(tmp_path / "source", 4)
    build = tmp_path / "build"
    build.mkdir()
    (build / "config.json").write_text(json.dumps({**BUILD_CONFIG, "val_percent": 0, "encoding": "none",
                                                   "source": {"type": "folder", "path": str(tmp_path / "source")}}))
    assert build_dataset(str(build / "config.json")) == 0
    shutil.copytree(build / "dataset", job.folder / jobfiles.DATASET)
    page.goto(f"/datasets/{job.pk}/explore?split=train")
    expect(page.locator("#gallery")).to_have_attribute("data-masks-drawn", "true")
    targets = Instances().read(job.folder / jobfiles.DATASET, "train")
    for position in range(4):
        alphas = page.evaluate("""(index) => {
          const canvas = document.querySelector(`.masked[data-index="${index}"] canvas`);
          const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
          const counts = {};
          for (let i = 3; i < data.length; i += 4) counts[data[i]] = (counts[data[i]] || 0) + 1;
          return counts;
        }""", position)
        numbers = np.asarray(targets[position])[..., INSTANCE]
        assert alphas.get("255", 0) == outline_pixels(numbers) > 0
        assert alphas.get("128", 0) == int((numbers > 0).sum()) - outline_pixels(numbers)
