"""Object detection datasets on the web side, with no worker: the New
dataset form and API refuse each bad input with its message and make the
build's params; a built dataset's section (statistics, COCO link), its COCO
download and its gallery with boxes; classification's pages keep theirs."""

from __future__ import annotations

import html
import io
import json
import zipfile

import pytest
from django.test import Client
from PIL import Image

from datasets import services
from datasets.detection_form import DetectionDatasetForm, parse_class_map
from datasets.forms import defaults
from jobs.models import Job, Status
from tests.datasetfiles import class_folders, tar_of
from tests.detectionfiles import BOXES, CLASSES, HEIGHT, SKIPPED, SMALL_BOXES, WIDTH, make_detection_dataset
from tests.evalfiles import uploaded_dataset_job
from tests.trainfiles import make_dataset
from web.serverfolders import roots as server_roots


@pytest.fixture
def roots(tmp_path, settings):
    root = tmp_path / "imports"
    (root / "kitti" / "image_2").mkdir(parents=True)
    settings.DATASET_ROOTS = [str(root)]
    return root


@pytest.fixture
def client(alice):
    client = Client()
    client.force_login(alice)
    return client


def allowed_roots():
    return [str(root) for root in server_roots()]


def create(client, **fields):
    return client.post("/api/datasets", data=json.dumps({"name": "boxes", "task": "detection", **fields}),
                       content_type="application/json")


FOLDER_PARAMS = {"task": "detection", "source": {"type": "folder", "path": "/srv/kitti"}, "label_format": "kitti",
                 "class_map": None, "placing": {"pad_width": None, "pad_height": None, "min_box_size": 1.0},
                 "width": WIDTH, "height": HEIGHT, "resize_mode": "squash", "val_percent": 25.0, "test_percent": 0.0,
                 "encoding": "png", "quality": 90, "seed": 1, "mean": True, "channels": 3}


@pytest.fixture
def built(alice):
    """A done detection dataset job with its built folder."""
    job = Job.objects.create(kind="dataset", name="boxes", owner=alice, status=Status.DONE, params=FOLDER_PARAMS,
                             progress=1.0)
    make_detection_dataset(services.folder(job), options=FOLDER_PARAMS)
    return job


@pytest.mark.parametrize("fields, field, message", [
    ({"class_map": "Car\nVan:\n"}, "class_map", "Line 2 (“Van:”) gives no new name after its colon: write “Van” "
                                                "alone to keep the name."),
    ({"class_map": ": car"}, "class_map", "Line 1 (“: car”) names no class before its colon."),
    ({"class_map": "Car\nVan: car\nCar: auto"}, "class_map", "Line 3 names the class “Car” again (first on line 1)."),
    ({"class_map": ["Car"]}, "class_map", "Give text here, not a JSON array."),
    ({"pad_width": 640}, "pad_height", "Give both padding sides, width and height, or neither."),
    ({"pad_height": 480}, "pad_width", "Give both padding sides, width and height, or neither."),
    ({"pad_width": 0, "pad_height": 480}, "pad_width", "A padded size is at least 1 pixel."),
    ({"pad_width": -5, "pad_height": -5}, "pad_height", "A padded size is at least 1 pixel."),
    ({"min_box_size": -1}, "min_box_size", "The minimum box size is 0 (keep every box) or more pixels."),
    ({"label_format": "xml"}, "label_format", "“xml” is not a label format: the formats are auto, kitti, voc, coco, "
                                              "yolo."),
    ({"folder": ""}, "folder", "Give the folder of images and labels."),
    ({"folder": "imports/none"}, "folder", "imports/none is not a folder."),
    ({"source": "lists"}, "source", "Select a valid choice. lists is not one of the available choices."),
    ({"source": "archive", "folder": ""}, "archive", "Choose an archive to upload."),
])
def test_each_bad_input_is_refused_with_its_message_by_the_api_and_the_page(client, roots, fields, field, message):
    sent = {"source": "folder", "folder": "imports/kitti", **fields}
    answer = create(client, **sent)
    assert answer.status_code == 400, answer.content
    assert [e["message"] for e in answer.json()["errors"][field]] == [message]
    if isinstance(fields.get("class_map"), list):
        return  # a page's textarea sends text
    page = client.post("/datasets/new/", {**_page_defaults(), "name": "boxes", "task": "detection", **sent})
    assert page.status_code == 400 and message in html.unescape(page.content.decode())
    assert "New object detection dataset" in page.content.decode()
    assert not Job.objects.exists()


def _page_defaults():
    """What the page posts untouched (an unticked box is not sent)."""
    return {k: v for k, v in defaults(DetectionDatasetForm).items() if v is not False}


def test_an_unknown_task_is_refused_naming_the_tasks(client, roots):
    message = "There is no task “keypoints”: the tasks are classification, detection, segmentation, instance_segmentation."
    answer = create(client, task="keypoints", source="folder", folder="imports/kitti")
    assert answer.status_code == 400
    assert answer.json()["errors"]["task"][0]["message"] == message and message in answer.json()["error"]
    assert create(client, task=["detection"]).status_code == 400
    page = client.get("/datasets/new/?task=keypoints")
    assert page.status_code == 400 and message in html.unescape(page.content.decode())
    posted = client.post("/datasets/new/", {"name": "x", "task": "keypoints"}, headers={"Accept": "application/json"})
    assert posted.status_code == 400 and posted.json()["errors"]["task"][0]["message"] == message


def test_the_class_map_keeps_the_classes_listed_and_renames_some():
    assert parse_class_map("Car: car\n\n Van : car \nPedestrian: person\nCyclist\n") == {
        "Car": "car", "Van": "car", "Pedestrian": "person", "Cyclist": "Cyclist"}
    assert parse_class_map("  \n") is None


def test_a_folder_makes_the_builds_params(client, roots):
    answer = create(client, source="folder", folder="imports/kitti", label_format="kitti",
                    class_map="Car: car\nVan: car\nPedestrian: person", pad_width=1248, pad_height=384,
                    min_box_size=0, width=640, height=192, encoding="jpeg", quality=80, val_percent=10)
    assert answer.status_code == 201, answer.content
    params = Job.objects.get(pk=answer.json()["id"]).params
    assert params == {
        "task": "detection", "source": {"type": "folder", "path": str(roots / "kitti")}, "label_format": "kitti",
        "class_map": {"Car": "car", "Van": "car", "Pedestrian": "person"},
        "placing": {"pad_width": 1248, "pad_height": 384, "min_box_size": 0.0},
        "width": 640, "height": 192, "resize_mode": "squash", "val_percent": 10.0, "test_percent": 0.0,
        "encoding": "jpeg", "quality": 80, "seed": 1, "mean": True, "channels": 3, "roots": allowed_roots(),
        "archive_limits": params["archive_limits"]}
    assert set(params["archive_limits"]) == {"max_total_bytes", "max_ratio"}


def test_an_upload_makes_the_builds_params_and_is_kept_in_the_job(client, roots, tmp_path):
    archive = tar_of(class_folders(tmp_path / "voc", {"red": 1}), tmp_path / "voc.tar.gz")
    with open(archive, "rb") as upload:
        answer = client.post("/api/datasets", {"name": "voc", "task": "detection", "source": "archive",
                                               "archive": upload, "label_format": "voc", "keep_upload": "true"})
    assert answer.status_code == 201, answer.content
    job = Job.objects.get(pk=answer.json()["id"])
    kept = job.folder / "upload" / "archive.tar.gz"
    assert kept.is_file()
    assert job.params == {
        "task": "detection", "source": {"type": "archive", "name": "voc.tar.gz", "path": str(kept)},
        "keep_upload": True, "label_format": "voc", "class_map": None,
        "placing": {"pad_width": None, "pad_height": None, "min_box_size": 1.0},
        "width": 256, "height": 256, "resize_mode": "squash", "val_percent": 25.0, "test_percent": 0.0,
        "encoding": "png", "quality": 90, "seed": 1, "mean": True, "channels": 3, "roots": allowed_roots(),
        "archive_limits": job.params["archive_limits"]}
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert str(job.folder) not in page and "<td>Format</td><td>voc</td>" in page


def test_the_new_page_switches_between_the_tasks(client):
    classification = client.get("/datasets/new/").content.decode()
    detection = client.get("/datasets/new/?task=detection").content.decode()
    assert "New image classification dataset" in classification and 'name="train_folder"' in classification
    assert 'href="?task=detection"' in classification
    assert "New object detection dataset" in detection and 'name="label_format"' in detection
    assert 'name="min_per_class"' not in detection and 'name="train_list"' not in detection
    for shown in ("KITTI", "Pascal VOC", "COCO JSON", "YOLO", "label_2", "Annotations/", "classes.txt"):
        assert shown in detection
    assert '<input type="hidden" name="task" value="detection">' in detection


def test_the_section_shows_the_statistics_the_skipped_files_and_the_coco_link(client, built):
    page = html.unescape(client.get(f"/jobs/{built.pk}/").content.decode())
    assert f'href="/datasets/{built.pk}/coco.zip"' in page and "Download as COCO" in page
    assert 'id="box-statistics"' in page and 'id="box-chart"' in page
    rows = {"Boxes": "<td>4</td><td>2</td>", "Images without boxes": "<td>1</td><td>0</td>",
            "Difficult boxes": "<td>1</td><td>0</td>", "Ignore regions": "<td>1</td><td>0</td>"}
    for label, cells in rows.items():
        assert f"<tr><th>{label}</th>{cells}</tr>" in page
    assert f"Boxes left out as smaller than the minimum box size: {SMALL_BOXES}" in page
    assert "<tr><td>5–9</td><td>0</td><td>0</td></tr>" in page  # boxes per image
    assert "<tr><td>8–16</td>" in page  # box widths
    assert SKIPPED[0]["reason"] in page
    chart = json.loads(page.split('id="box-chart-data" type="application/json">')[1].split("</script>")[0])
    assert chart == {"classes": list(CLASSES), "series": [{"name": "train", "y": [2, 2]}, {"name": "val", "y": [1, 1]}]}


def test_the_statistics_are_computed_once_per_build(built):
    info = services.manifest(built)
    services._statistics.cache_clear()
    first = services.statistics(built, info)
    assert services.statistics(built, info) is first and services._statistics.cache_info().hits == 1


def test_a_classification_section_is_as_it_was(client, alice):
    job = uploaded_dataset_job(alice)
    manifest = make_dataset(services.folder(job)) / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "options": job.params}))
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="class-chart"' in page
    assert "coco.zip" not in page and "box-statistics" not in page
    answer = client.get(f"/datasets/{job.pk}/coco.zip")
    assert answer.status_code == 404
    assert answer.content.decode() == "Only object detection datasets download as COCO; this one is classification."
    gallery = client.get(f"/datasets/{job.pk}/explore").content.decode()
    assert "drawn-data" not in gallery and "class-toggles" not in gallery and 'id="gallery"' in gallery


def test_the_coco_download_is_a_zip_pycocotools_reads_with_the_boxes(client, built, tmp_path):
    from pycocotools.coco import COCO

    answer = client.get(f"/datasets/{built.pk}/coco.zip")
    assert answer.status_code == 200 and answer.streaming
    assert answer["Content-Type"] == "application/zip"
    assert answer["Content-Disposition"] == 'attachment; filename="boxes-coco.zip"'
    with zipfile.ZipFile(io.BytesIO(b"".join(answer.streaming_content))) as archive:
        archive.extractall(tmp_path / "coco")
    for split in ("train", "val"):
        coco = COCO(str(tmp_path / "coco" / "annotations" / f"instances_{split}.json"))
        assert [c["name"] for c in coco.loadCats(coco.getCatIds())] == list(CLASSES)
        assert len(coco.getImgIds()) == len(BOXES[split])
        for position, rows in enumerate(BOXES[split]):
            found = sorted((a["bbox"], a["category_id"] - 1, a["iscrowd"])
                           for a in coco.loadAnns(coco.getAnnIds(imgIds=[position + 1])))
            expected = sorted(([x1, y1, x2 - x1, y2 - y1], c, int(f & 1)) for x1, y1, x2, y2, c, f in rows if c >= 0)
            assert found == expected
    assert not (tmp_path / "coco" / "annotations" / "instances_test.json").exists()


def test_a_dataset_not_built_has_no_coco_download(client, alice):
    job = Job.objects.create(kind="dataset", name="later", owner=alice, status=Status.RUNNING)
    answer = client.get(f"/datasets/{job.pk}/coco.zip")
    assert answer.status_code == 404 and "not built yet" in answer.content.decode()


def test_the_gallery_carries_each_images_boxes_and_the_class_toggles(client, built):
    page = html.unescape(client.get(f"/datasets/{built.pk}/explore?split=train").content.decode())
    drawn = json.loads(page.split('id="drawn-data" type="application/json">')[1].split("</script>")[0])
    assert drawn["classes"] == list(CLASSES) and (drawn["width"], drawn["height"]) == (WIDTH, HEIGHT)
    assert set(drawn["images"]) == {"0", "1", "2", "3"}
    assert drawn["images"]["0"] == [
        {"x1": 2.0, "y1": 3.0, "x2": 12.0, "y2": 10.0, "class": 0, "difficult": False, "ignore": False},
        {"x1": 14.0, "y1": 2.0, "x2": 20.0, "y2": 20.0, "class": 1, "difficult": True, "ignore": False}]
    assert drawn["images"]["1"][1] == {"x1": 20.0, "y1": 10.0, "x2": 30.0, "y2": 20.0, "class": None,
                                       "difficult": False, "ignore": True}
    assert drawn["images"]["2"] == []
    for index, name in enumerate(CLASSES):
        assert f'<input type="checkbox" checked data-class="{index}">' in page and name in page
    assert "datasets/explore.js" in page


def test_the_class_filter_shows_the_images_with_a_box_of_that_class(client, built):
    page = html.unescape(client.get(f"/datasets/{built.pk}/explore?split=train&class=1").content.decode())
    drawn = json.loads(page.split('id="drawn-data" type="application/json">')[1].split("</script>")[0])
    assert set(drawn["images"]) == {"0", "1"}, "the images with a person box (not the ignore region)"
    assert "2 image(s)" in page


def test_the_resize_preview_shows_the_first_image_of_a_detection_folder_past_its_labels(client, roots):
    voc = roots / "voc"
    (voc / "Annotations").mkdir(parents=True)
    for number in range(300):  # more label files than the preview once looked at
        (voc / "Annotations" / f"{number:04}.xml").write_text("<annotation/>")
    (voc / "JPEGImages").mkdir()
    Image.new("RGB", (8, 4), (0, 0, 255)).save(voc / "JPEGImages" / "0000.png")
    page = client.get("/datasets/new/?task=detection").content.decode()
    assert 'id="preview-folder" data-field="folder"' in page
    answer = client.post("/datasets/preview", {"folder": str(voc), "width": 4, "height": 4, "resize_mode": "squash"})
    assert answer["Content-Type"] == "image/png", answer.content
    shown = Image.open(io.BytesIO(answer.content))
    assert shown.size == (4, 4) and shown.getpixel((2, 2)) == (0, 0, 255)
    (voc / "JPEGImages" / "0000.png").unlink()
    nothing = client.post("/datasets/preview", {"folder": str(voc), "width": 4, "height": 4})
    assert nothing.status_code == 400 and nothing.json()["error"] == "That folder holds no image to preview."
