"""A detector evaluated on new labelled images through the web and a real
worker: a Faster R-CNN trained three epochs on 48 rectangles, evaluated on
those rectangles as a Pascal VOC server folder (the API) and as an uploaded
YOLO archive with a class it does not know and a bad line (the New
evaluation page); both score alike, and at the threshold chosen. Then what
the forms refuse, on the page and in the API, before anything is created,
and what the model's page and the New evaluation page offer a detector."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.urls import reverse

from jobs.models import Job, Status
from tests.clients import signed_in
from tests.detectionfiles import copied_detector, train_detector_once, voc_folder, yolo_files
from tests.evalfiles import imports, model_with_snapshot
from tests.jobtools import wait_status

TIMEOUT = 180
THRESHOLD_WRONG = "The score threshold is a number from 0 to 1."
CLASSES = ["Car", "Cyclist", "Truck"]  # the YOLO archive's classes file: the model knows no Truck


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train_detector_once(tmp_path_factory.mktemp("detector"))  # on one thread


def yolo_zip(files: dict[str, bytes]) -> io.BytesIO:
    """The files zipped in one folder, as a user zips one."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, content in files.items():
            archive.writestr(f"rectangles/{name}", content)
    data.seek(0)
    data.name = "rectangles.zip"
    return data


def errors_of(response) -> dict[str, list[str]]:
    assert response.status_code == 400, response.content
    return {field: [error["message"] for error in errors] for field, errors in response.json()["errors"].items()}


@pytest.mark.one_database
def test_a_detector_on_a_voc_folder_and_a_yolo_archive(alice, worker, trained):
    model = copied_detector(alice, trained)
    client = signed_in(alice)
    voc = voc_folder(trained / "kitti", imports() / "voc")
    response = client.post("/api/evaluations", data=json.dumps({
        "model": model.pk, "source": "folder", "folder": str(voc), "label_format": "voc", "score_threshold": 0.2}),
        content_type="application/json")
    assert response.status_code == 201, response.content
    folder_job = Job.objects.get(pk=response.json()["id"])
    assert folder_job.params["source"]["label_format"] == "voc"
    assert folder_job.params["report_options"] == {"score_threshold": 0.2}

    files = yolo_files(trained / "kitti", CLASSES)
    archive = yolo_zip({**files, "labels/000000.txt": files["labels/000000.txt"] + b"2 0.5 0.5 0.5 0.5\n",
                        "images/bad.png": files["images/000000.png"], "labels/bad.txt": b"0 0.5 0.5\n"})
    page = client.post(reverse("new-evaluation"), {"model": model.pk, "source": "archive", "archive": archive,
                                                   "label_format": "auto", "score_threshold": "0.2", "top_n": 5})
    assert page.status_code == 302, page.content.decode()[-3000:]
    archive_job = Job.objects.get(pk=page["Location"].rstrip("/").rsplit("/", 1)[-1])

    reports = {}
    for job in (folder_job, archive_job):
        job = wait_status(job, Status.DONE, Status.FAILED, timeout=TIMEOUT)
        assert job.status == Status.DONE, job.error
        reports[job.params["source"]["type"]] = report = client.get(f"/api/evaluations/{job.pk}/report").json()["report"]
        assert report["layout"] == "boxes" and report["score_threshold"] == 0.2
        assert str(trained) not in json.dumps(report) and str(imports()) not in json.dumps(report)
        worst = (report["worst"] or [{"index": 0}])[0]["index"]
        png = client.get(f"/evaluations/{job.pk}/images/{worst}.png")
        assert png["Content-Type"] == "image/png" and png.content.startswith(b"\x89PNG")
        section = client.get(reverse("job", args=[job.pk])).content.decode()
        assert 'id="skipped-files"' in section and 'id="worst-images"' in section

    folder, archive = reports["folder"], reports["archive"]
    assert (folder["count"], folder["boxes"], folder["skipped"]) == (48, 48, [])
    assert folder["per_class"]["Car"]["boxes"] == folder["per_class"]["Cyclist"]["boxes"] == 24
    assert (archive["count"], archive["boxes"]) == (48, 48), "the truck left out, its image kept"
    for key in ("map50", "map", "precision", "recall", "missed_total", "false_positives_total"):
        assert archive[key] == pytest.approx(folder[key], abs=1e-6), key
    assert folder["map50"] > 0
    reasons = {(row["file"], row["line"]): row["reason"] for row in archive["skipped"]}
    assert reasons == {("labels", None): "class 'Truck' is not in the class list; its 1 box is left out",
                       ("labels/bad.txt", 1): "has 3 columns; a YOLO line is 'class cx cy w h' (5)"}


def test_what_the_forms_refuse_with_their_reasons(alice, trained, tmp_path):
    model = copied_detector(alice, trained)
    client = signed_in(alice)
    folder = imports() / "rectangles"
    folder.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    refused = {
        "source": ({"source": "list", "list_text": f"{folder}/a.png Car\n"},
                   "Object detection models are not evaluated on a text list: they take a split of their dataset, "
                   "a folder on the server or an uploaded archive of images with their boxes in KITTI, Pascal VOC, "
                   "COCO JSON or YOLO layout, as a detection dataset is imported."),
        "folder": ({"source": "folder", "folder": str(outside)}, f"{outside} is not inside the folders this server "
                                                                  "may read: "),
        "score_threshold": ({"source": "folder", "folder": str(folder), "score_threshold": 1.5}, THRESHOLD_WRONG),
        "label_format": ({"source": "folder", "folder": str(folder), "label_format": "pascal"},
                         "“pascal” is not a label format: the formats are auto, kitti, voc, coco, yolo."),
    }
    for field, (body, message) in refused.items():
        response = client.post("/api/evaluations", data=json.dumps({"model": model.pk, **body}),
                               content_type="application/json")
        assert errors_of(response)[field][0].startswith(message), field
        page = client.post(reverse("new-evaluation"), {"model": model.pk, "top_n": 5, "score_threshold": 0.5,
                                                       "label_format": "auto", **body})
        assert page.status_code == 200 and message.split(":")[0] in page.content.decode().replace("&#x27;", "'"), field
    for value in ("abc", "nan", -0.1, [0.5]):
        response = client.post("/api/evaluations", data=json.dumps({
            "model": model.pk, "source": "folder", "folder": str(folder), "score_threshold": value}),
            content_type="application/json")
        assert errors_of(response) == {"score_threshold": [THRESHOLD_WRONG]}, value
        response = client.post(f"/api/models/{model.pk}/evaluate", data=json.dumps({"score_threshold": value}),
                               content_type="application/json")
        assert errors_of(response) == {"score_threshold": [THRESHOLD_WRONG]}, value
    page = client.post(reverse("model-evaluate", args=[model.pk]), {"split": "val", "score_threshold": "2"},
                       follow=True)
    assert page.status_code == 200 and THRESHOLD_WRONG in page.content.decode()
    assert not Job.objects.filter(kind="evaluation").exists()


def test_a_detectors_pages_offer_the_threshold_and_new_images(alice, trained):
    detector = copied_detector(alice, trained)
    classifier = model_with_snapshot(alice)
    client = signed_in(alice)
    page = client.get(reverse("job", args=[detector.pk])).content.decode()
    assert 'name="score_threshold"' in page and 'id="classify-many"' in page and ">Detect many</a>" in page
    shown = client.get(reverse("job", args=[classifier.pk])).content.decode()
    assert 'name="score_threshold"' not in shown and ">Classify many</a>" in shown

    new = client.get(reverse("new-evaluation") + f"?model={detector.pk}")
    tasks = json.loads(new.content.decode().split('id="evaluation-model-tasks" type="application/json">')[1]
                       .split("</script>")[0])
    assert tasks[str(detector.pk)]["sources"] == ["split", "folder", "archive"]
    assert tasks[str(detector.pk)]["options"] == ["score_threshold", "label_format"]
    assert tasks[str(classifier.pk)] == {"sources": ["split", "list", "folder", "archive"], "options": [],
                                         "labelled_files": "top-level subfolders named after the model's classes "
                                                           "give the labels"}

    response = client.post(reverse("model-evaluate", args=[detector.pk]), {"split": "val", "score_threshold": "0.25"})
    job = Job.objects.get(kind="evaluation")
    assert response.status_code == 302 and job.params["report_options"] == {"score_threshold": 0.25}
    client.post(reverse("model-evaluate", args=[classifier.pk]), {"split": "val", "score_threshold": "0.25"})
    assert Job.objects.filter(kind="evaluation").latest("pk").params["report_options"] == {}
