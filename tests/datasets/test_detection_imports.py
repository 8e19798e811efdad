"""Detection datasets end to end: the API with a real worker running the
build job, from a server folder and from an uploaded VOC archive, to the
dataset's page, its gallery's boxes and its COCO download."""

from __future__ import annotations

import io
import json
import zipfile

from django.test import Client

from jobs.models import Job, Status
from tests.jobtools import wait_status
from tests.trainer.test_detection_build import kitti_folder, painted


def built(job_id: int, status: str = Status.DONE) -> Job:
    job = wait_status(Job.objects.get(pk=job_id), status, Status.FAILED, timeout=60)
    assert job.status == status, job.error
    return job


def voc_zip(path) -> bytes:
    """A VOC archive of three photos, one of them with a box that reaches outside its image."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for stem, (x1, y1, x2, y2) in (("1", (9, 9, 40, 30)), ("2", (21, 5, 60, 45)), ("3", (9, 9, 90, 30))):
            archive.writestr(f"VOC/JPEGImages/{stem}.png", painted((64, 48), (max(x1 - 1, 0), y1 - 1, min(x2, 64), y2)))
            archive.writestr(f"VOC/Annotations/{stem}.xml", (
                f"<annotation><filename>{stem}.png</filename><size><width>64</width><height>48</height></size>"
                f"<object><name>dog</name><difficult>0</difficult><bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin>"
                f"<xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox></object></annotation>"))
    path.write_bytes(out.getvalue())
    return path


def test_an_uploaded_voc_archive_builds_a_detection_dataset_that_explores_and_downloads(alice, worker, tmp_path):
    client = Client()
    client.force_login(alice)
    with open(voc_zip(tmp_path / "voc.zip"), "rb") as handle:
        response = client.post("/api/datasets", {"task": "detection", "name": "dogs", "source": "archive",
                                                 "archive": handle, "width": 32, "height": 24, "val_percent": 0,
                                                 "test_percent": 0, "encoding": "png"})
    assert response.status_code == 201, response.json()
    job = built(response.json()["id"])
    info = client.get(f"/api/datasets/{job.pk}").json()["manifest"]
    assert info["task"] == "detection" and info["classes"] == ["dog"]
    assert info["splits"]["train"]["count"] == 2 and info["skipped"]["total"] == 1
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Download as COCO" in page and "Annotations/3.xml" in page  # the box past its image, reported

    gallery = client.get(f"/datasets/{job.pk}/explore").context["drawn"]
    assert sorted(box["x1"] for boxes in gallery["images"].values() for box in boxes) == [4.0, 10.0]

    coco = b"".join(client.get(f"/datasets/{job.pk}/coco.zip").streaming_content)
    with zipfile.ZipFile(io.BytesIO(coco)) as archive:
        annotations = json.loads(archive.read("annotations/instances_train.json"))
    assert sorted(a["bbox"] for a in annotations["annotations"]) == [[4.0, 4.0, 16.0, 11.0], [10.0, 2.0, 20.0, 20.5]]


def test_a_server_folder_in_a_chosen_format_with_a_class_map(alice, worker, tmp_path, settings, monkeypatch):
    root = tmp_path / "imports"
    settings.DATASET_ROOTS = [str(root)]
    monkeypatch.setenv("DATASET_ROOTS", str(root))
    source = kitti_folder(root / "kitti", {
        "1": [("Car", (8, 8, 40, 24)), ("Van", (40, 20, 60, 40)), ("Tram", (2, 2, 6, 6))],
        "2": [("Pedestrian", (20, 6, 36, 46))],
    })
    client = Client()
    client.force_login(alice)
    response = client.post("/api/datasets", json.dumps({
        "task": "detection", "name": "kitti", "source": "folder", "folder": str(source), "label_format": "kitti",
        "class_map": "Car: car\nVan: car\nPedestrian: person", "width": 32, "height": 24, "val_percent": 0,
        "test_percent": 0, "min_box_size": 0}), content_type="application/json")
    assert response.status_code == 201, response.json()
    job = built(response.json()["id"])
    info = json.loads((job.folder / "dataset" / "manifest.json").read_text())
    assert info["classes"] == ["car", "person"] and info["splits"]["train"]["per_class"] == [1, 1]
    skipped = json.loads((job.folder / "dataset" / "skipped.json").read_text())
    assert any("Tram" in entry["reason"] for entry in skipped)
