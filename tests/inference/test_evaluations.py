"""Evaluations through a real worker: a trained LeNet evaluated on its test
split, on a labelled list whose confusion matrix is known, on a folder with
class subfolders and on archives; bad inputs and a deleted model fail with
a clear message and leave no results behind."""

from __future__ import annotations

import io
import json
import shutil
import zipfile

import pytest

from jobs import services as job_services
from jobs.models import Job, Status
from tests.clients import signed_in
from tests.evalfiles import imports, submit_list, trained_model, write_bars
from tests.jobtools import events_of, wait_status
from tests.processes import wait_for
from trainer.evaluation_files import OUTPUT
from trainer.inference import classify, load_model

TIMEOUT = 120



def post(client, url, body) -> Job:
    response = client.post(url, data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def report_of(client, job: Job) -> dict:
    return client.get(f"/api/evaluations/{job.pk}/report").json()["report"]


def rows_of(client, job: Job, **query) -> dict:
    response = client.get(f"/api/evaluations/{job.pk}/rows", query)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.one_database
def test_a_trained_model_evaluated_on_its_test_split_and_on_a_labelled_list(alice, worker):
    model = trained_model(alice)
    client = signed_in(alice)
    split = wait_status(post(client, f"/api/models/{model.pk}/evaluate", {"split": "test"}), Status.DONE,
                        Status.FAILED, timeout=TIMEOUT)
    assert split.status == Status.DONE, split.error
    report = report_of(client, split)
    assert report["count"] == report["labelled"] == 120
    assert sum(map(sum, report["confusion"])) == 120
    assert report["top1"] >= 0.9 and "top5" not in report, "top-5 of four classes says nothing"
    assert "top5" not in client.get(f"/api/jobs/{split.pk}").json()
    assert [c["class"] for c in report["per_class"]] == ["horizontal", "vertical", "diagonal", "antidiagonal"]
    assert events_of(split, "result")[-1]["data"]["top1"] == report["top1"]
    image = client.get(rows_of(client, split, size=1)["rows"][0]["image"])
    assert image["Content-Type"] == "image/png" and image.content.startswith(b"\x89PNG")

    # A known set: two of each class, labelled rightly, then two more bars given the wrong labels.
    labels = [0, 0, 1, 1, 2, 2, 3, 3, 0, 1]
    given = labels[:8] + [1, 3]
    paths = write_bars(imports() / "known", labels)
    predicted = [top[0]["index"] for top in classify(load_model(model.folder), [str(p) for p in paths])]
    assert predicted == labels, "the trained LeNet knows clean bars"
    text = "".join(f"{path} {name}\n" for path, name in zip(paths, ["horizontal", "0", "vertical", "1", "diagonal",
                                                                      "2", "antidiagonal", "3", "vertical", "3"], strict=True))
    listed = wait_status(post(client, "/api/evaluations", {"model": model.pk, "source": "list", "list_text": text}),
                         Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert listed.status == Status.DONE, listed.error
    report = report_of(client, listed)
    expected = [[0] * 4 for _ in range(4)]
    for truth, guess in zip(given, predicted, strict=True):
        expected[truth][guess] += 1
    assert report["confusion"] == expected == [[2, 0, 0, 0], [1, 2, 0, 0], [0, 0, 2, 0], [0, 1, 0, 2]]
    assert report["top1"] == 0.8
    assert [c["precision"] for c in report["per_class"]] == [2 / 3, 2 / 3, 1.0, 1.0]
    assert [c["recall"] for c in report["per_class"]] == [1.0, 2 / 3, 1.0, 2 / 3]
    assert report["per_class"][0]["accuracy"] == 9 / 10
    assert sorted(report["mistakes"]) == [8, 9]
    cell = rows_of(client, listed, label=1, predicted=0)
    assert [row["name"] for row in cell["rows"]] == [str(paths[8])]
    assert cell["rows"][0]["outcome"] == "wrong"
    assert rows_of(client, listed, outcome="correct")["total"] == 8
    csv = client.get(f"/evaluations/{listed.pk}/download/csv")
    assert b"".join(csv.streaming_content).decode().count("\n") == 11
    kept = client.get(cell["rows"][0]["image"])
    assert kept["Content-Type"] == "image/png" and kept.content.startswith(b"\x89PNG")
    assert str(imports()) not in json.dumps(rows_of(client, listed)["rows"][0]["image"])


@pytest.mark.one_database
def test_a_folder_with_class_subfolders_an_unreadable_file_and_an_unknown_folder_then_compare(alice, worker):
    model = trained_model(alice, group="sweep")
    folder = imports() / "mixed"
    write_bars(folder / "vertical", [1, 1])
    write_bars(folder / "junk", [0])
    (folder / "vertical" / "notes.png").write_text("not an image")
    job = wait_status(post(signed_in(alice), "/api/evaluations",
                           {"model": model.pk, "source": "folder", "folder": str(folder)}),
                      Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert job.status == Status.DONE, job.error
    report = report_of(signed_in(alice), job)
    assert (report["count"], report["classified"], report["labelled"], report["unreadable"]) == (4, 3, 2, 1)
    assert "junk" in report["warnings"][0]
    rows = rows_of(signed_in(alice), job)["rows"]
    assert [(row["name"], row["label_name"], row["outcome"]) for row in rows] == [
        ("junk/000-horizontal.png", None, "unlabelled"), ("vertical/000-vertical.png", "vertical", "correct"),
        ("vertical/001-vertical.png", "vertical", "correct"), ("vertical/notes.png", "vertical", "unreadable")]
    assert "cannot be used as an image" in rows[3]["error"] and rows[3]["image"] is None

    compared = signed_in(alice).post("/api/compare/alice/sweep", data=json.dumps({"split": "val"}),
                                      content_type="application/json")
    assert compared.status_code == 201, compared.content
    wait_status(Job.objects.get(pk=compared.json()["jobs"][0]["id"]), Status.DONE, timeout=TIMEOUT)
    compare_rows = signed_in(alice).get("/api/compare/alice/sweep").json()["evaluations"]
    assert [(row["model"], row["split"], row["status"], row["count"]) for row in compare_rows] == [(model.pk, "val", "done", 120)]
    assert compare_rows[0]["top1"] >= 0.9


def zip_of(files: dict[str, bytes]) -> io.BytesIO:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    data.seek(0)
    data.name = "upload.zip"
    return data


@pytest.mark.one_database
def test_archives_and_a_deleted_model(alice, worker_factory, tmp_path):
    model = trained_model(alice)
    client = signed_in(alice)
    bar = write_bars(tmp_path, [2])[0].read_bytes()

    def upload(files):
        response = client.post("/api/evaluations", {"model": model.pk, "source": "archive", "archive": zip_of(files)})
        assert response.status_code == 201, response.content
        return Job.objects.get(pk=response.json()["id"])

    good = upload({"diagonal/a.png": bar, "b.png": bar})
    no_images = upload({"readme.txt": b"no pictures here"})
    doomed = post(client, f"/api/models/{model.pk}/evaluate", {})
    worker_factory()
    good = wait_status(good, Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert good.status == Status.DONE, good.error
    report = report_of(client, good)
    assert (report["count"], report["labelled"], report["top1"]) == (2, 1, 1.0)
    assert not (good.folder / f"{OUTPUT}.partial").exists()
    no_images = wait_status(no_images, Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert no_images.status == Status.FAILED
    assert "None of the 1 file(s) could be used as an image" in no_images.error
    page = client.get(f"/jobs/{no_images.pk}/").content.decode()
    assert "The report appears when the evaluation is done" not in page and 'id="retry"' in page
    assert not (no_images.folder / OUTPUT).exists()
    wait_status(doomed, Status.DONE, timeout=TIMEOUT)

    gone = post(client, f"/api/models/{model.pk}/evaluate", {})
    shutil.rmtree(model.folder)
    gone = wait_status(gone, Status.DONE, Status.FAILED, timeout=TIMEOUT)
    assert gone.status == Status.FAILED and "gone" in gone.error
    assert not (gone.folder / OUTPUT).exists()



@pytest.mark.one_database
def test_an_aborted_evaluation_leaves_no_results(alice, worker):
    model = trained_model(alice)
    image = write_bars(imports() / "many", [0])[0]
    job = submit_list(alice, model, f"{image} horizontal\n" * 100_000)
    wait_for(lambda: any(e["data"]["done"] for e in events_of(job, "progress")), timeout=TIMEOUT,
             what="the evaluation to classify its first images")
    job_services.abort(job, alice)
    job = wait_status(job, Status.ABORTED, timeout=30)
    assert not (job.folder / OUTPUT).exists() and not (job.folder / f"{OUTPUT}.partial").exists()
