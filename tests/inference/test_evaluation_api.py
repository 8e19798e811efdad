"""Creating evaluations through the API and the pages, without running
them: every bad input is a 400 naming its field (never a 500) and creates
nothing; anyone signed in may evaluate any model and look at any report,
only the evaluation's owner or staff may change it."""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
from django.test import Client

from jobs.models import Job, Status
from tests.clients import signed_in
from tests.evalfiles import evaluated_split, imports, model_with_snapshot, write_bars


def post(client, url, body):
    return client.post(url, data=json.dumps(body) if not isinstance(body, str) else body,
                       content_type="application/json")


def refused(response, field: str) -> str:
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert field in errors, errors
    message = errors[field][0]
    return message["message"] if isinstance(message, dict) else message


def test_evaluate_queues_an_evaluation_of_the_models_split(alice):
    model = model_with_snapshot(alice)
    response = post(signed_in(alice), f"/api/models/{model.pk}/evaluate", {"split": "test"})
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.kind, job.status, job.owner) == ("evaluation", Status.QUEUED, alice)
    assert job.params["source"] == {"type": "split", "split": "test"}
    assert job.params["model"] == model.pk and job.params["snapshot"] is None
    assert response.json()["note"] == ""
    shown = signed_in(alice).get(f"/api/jobs/{job.pk}").json()["params"]
    assert str(model.folder) not in json.dumps(shown) and "roots" not in shown, "no server path for users"


def test_a_model_still_training_is_evaluated_with_a_note(alice):
    model = model_with_snapshot(alice, status=Status.RUNNING)
    response = post(signed_in(alice), f"/api/models/{model.pk}/evaluate", {})
    assert response.status_code == 201
    assert "still training" in response.json()["note"]


@pytest.mark.parametrize("body,field,words", [
    ({"split": "train"}, "split", "valid choice"),
    ({"split": ["val"]}, "split", "valid choice"),
    ({"snapshot": "epoch-9.pt"}, "snapshot", "no snapshot"),
    ({"snapshot": "../../etc/passwd"}, "snapshot", "no snapshot"),
    ({"snapshot": {"a": 1}}, "snapshot", "no snapshot"),
])
def test_evaluate_refuses_bad_input_and_creates_nothing(alice, body, field, words):
    model = model_with_snapshot(alice)
    before = Job.objects.count()
    assert words in refused(post(signed_in(alice), f"/api/models/{model.pk}/evaluate", body), field)
    assert Job.objects.count() == before


def test_evaluate_refuses_a_split_the_dataset_lacks_a_model_without_snapshots_and_no_model(alice):
    client = signed_in(alice)
    model = model_with_snapshot(alice, train=8, val=2, test=0)
    assert "no test images" in refused(post(client, f"/api/models/{model.pk}/evaluate", {"split": "test"}), "split")
    (model.folder / "checkpoints" / "epoch-1.pt").unlink()
    assert "no snapshot" in refused(post(client, f"/api/models/{model.pk}/evaluate", {}), "model")
    assert post(client, "/api/models/999999/evaluate", {}).status_code == 404
    dataset = Job.objects.get(kind="dataset")
    assert post(client, f"/api/models/{dataset.pk}/evaluate", {}).status_code == 404
    assert not Job.objects.filter(kind="evaluation").exists()


@pytest.mark.parametrize("body,field,words", [
    ({"model": None, "source": "list"}, "model", "required"),
    ({"model": "abc", "source": "list"}, "model", "whole number"),
    ({"model": 999999, "source": "list", "list_text": "x.png"}, "model", "no model"),
    ({"model": True, "source": "list"}, "model", "whole number"),
    ({"source": "list", "list_text": ""}, "list_text", "Write the list"),
    ({"source": "list", "list_text": "/etc/passwd"}, "list_text", "outside the folders"),
    ({"source": "list", "list_text": "relative.png"}, "list_text", "relative path"),
    ({"source": "folder", "folder": "/etc"}, "folder", "not inside the folders"),
    ({"source": "folder", "folder": ""}, "folder", "Give the folder"),
    ({"source": "archive"}, "archive", "Choose an archive"),
    ({"source": "split", "split": "test", "top_n": 0}, "top_n", "greater than or equal"),
    ({"source": "split", "split": "test", "top_n": 1000}, "top_n", "less than or equal"),
    ({"source": "nowhere"}, "source", "valid choice"),
    ({"source": "split", "split": "val", "device": "tpu"}, "device", "valid choice"),
])
def test_classify_many_refuses_bad_input_and_creates_nothing(alice, body, field, words):
    model = model_with_snapshot(alice)
    body = {"model": model.pk, **body}
    before = Job.objects.count()
    assert words in refused(post(signed_in(alice), "/api/evaluations", body), field)
    assert Job.objects.count() == before


@pytest.mark.parametrize("body", ["not json", "[1, 2]", "null"])
def test_a_body_that_is_not_a_json_object_is_a_400(alice, body):
    model = model_with_snapshot(alice)
    for url in ("/api/evaluations", f"/api/models/{model.pk}/evaluate", "/api/compare/alice/sweep"):
        assert refused(post(signed_in(alice), url, body), "body")


def test_a_list_below_the_roots_is_kept_in_the_job_folder(alice):
    model = model_with_snapshot(alice)
    paths = write_bars(imports() / "listed", [0, 1])
    text = f"{paths[0]} horizontal\n{paths[1]} 1\n"
    response = post(signed_in(alice), "/api/evaluations", {"model": model.pk, "source": "list", "list_text": text})
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.name == "Evaluation of lenet"
    assert job.params["source"]["type"] == "list"
    assert (job.folder / "upload" / "list.txt").read_text() == text.strip()


def test_an_upload_that_is_not_an_archive_is_refused(alice):
    model = model_with_snapshot(alice)
    big = io.BytesIO(b"this is not an archive" * 100_000)
    big.name = "images.zip"
    response = signed_in(alice).post("/api/evaluations", {"model": model.pk, "source": "archive", "archive": big})
    assert "not a zip or tar archive" in refused(response, "archive")
    assert not Job.objects.filter(kind="evaluation").exists()


def test_an_archive_upload_is_kept_in_the_job_folder(alice):
    model = model_with_snapshot(alice)
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("horizontal/a.png", b"png")
    data.seek(0)
    data.name = "images.zip"
    response = signed_in(alice).post("/api/evaluations", {"model": model.pk, "source": "archive", "archive": data})
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.folder / "upload" / "archive").read_bytes()[:2] == b"PK"


def test_anyone_signed_in_may_evaluate_and_look_only_the_owner_changes(alice, bob):
    model = model_with_snapshot(alice)
    response = post(signed_in(bob), f"/api/models/{model.pk}/evaluate", {})
    evaluation = Job.objects.get(pk=response.json()["id"])
    assert evaluation.owner == bob
    assert signed_in(alice).get(f"/api/evaluations/{evaluation.pk}/report").json()["report"] is None
    assert signed_in(alice).get(f"/jobs/{evaluation.pk}/").status_code == 200
    assert post(signed_in(alice), f"/api/jobs/{evaluation.pk}/abort", {}).status_code == 403
    assert post(signed_in(bob), f"/api/jobs/{evaluation.pk}/abort", {}).status_code == 202
    assert Client().get(f"/api/evaluations/{evaluation.pk}/report").status_code == 401
    assert post(Client(), f"/api/models/{model.pk}/evaluate", {}).status_code == 401


def test_compare_evaluates_every_model_of_the_group_and_says_which_it_left_out(alice, bob):
    first = model_with_snapshot(alice)
    second = model_with_snapshot(alice)
    (second.folder / "checkpoints" / "epoch-1.pt").unlink()
    model_with_snapshot(bob)  # bob's own group "sweep": another group
    response = post(signed_in(bob), "/api/compare/alice/sweep", {"split": "val"})
    assert response.status_code == 201, response.content
    assert [job["name"] for job in response.json()["jobs"]] == ["lenet: validation"]
    assert response.json()["jobs"][0]["owner"] == "bob"
    assert Job.objects.get(pk=response.json()["jobs"][0]["id"]).params["model"] == first.pk
    assert "no snapshot" in response.json()["skipped"][0]
    rows = signed_in(alice).get("/api/compare/alice/sweep").json()["evaluations"]
    assert [(row["model"], row["split"], row["status"]) for row in rows] == [(first.pk, "val", "queued")]
    assert signed_in(alice).get("/api/compare/bob/sweep").json()["evaluations"] == []
    assert "no model" in refused(post(signed_in(bob), "/api/compare/alice/nothing-here", {}), "group")
    for wrong in (2, True, "high"):
        assert "from 0 to 1" in refused(post(signed_in(bob), "/api/compare/alice/sweep", {"score_threshold": wrong}),
                                        "score_threshold")
    assert Job.objects.filter(kind="evaluation").count() == 1


def test_the_model_page_offers_evaluate_and_the_group_page_compare(alice):
    model = model_with_snapshot(alice)
    client = signed_in(alice)
    assert b'id="evaluate"' in client.get(f"/jobs/{model.pk}/").content
    group_page = client.get("/groups/alice/sweep/").content
    assert b'id="compare-button"' in group_page and b'name="score_threshold"' not in group_page  # classifiers'
    refused_compare = client.post("/compare/alice/sweep", {"split": "val", "score_threshold": "2"}, follow=True)
    assert "The score threshold is a number from 0 to 1." in refused_compare.content.decode()
    assert not Job.objects.filter(kind="evaluation").exists()
    response = client.post(f"/models/{model.pk}/evaluate", {"split": "val"})
    evaluation = Job.objects.get(kind="evaluation")
    assert response.status_code == 302 and response["Location"] == f"/jobs/{evaluation.pk}/"
    assert client.get(response["Location"]).status_code == 200
    assert client.get(f"/evaluations/new/?model={model.pk}").status_code == 200
    assert client.get(f"/evaluations/{evaluation.pk}/images/0.png")["Content-Type"] == "image/png"  # the dataset's
    assert client.get(f"/evaluations/{evaluation.pk}/images/99999.png").status_code == 404
    assert client.get(f"/evaluations/{evaluation.pk}/download/csv").status_code == 404


def test_a_list_line_that_links_outside_the_roots_is_refused(alice, tmp_path):
    model = model_with_snapshot(alice)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"not yours")
    link = imports() / "innocent.png"
    link.unlink(missing_ok=True)
    link.symlink_to(secret)
    body = {"model": model.pk, "source": "list", "list_text": f"{link} horizontal"}
    assert "line 1" in refused(post(signed_in(alice), "/api/evaluations", body), "list_text")


@pytest.mark.parametrize("query,field", [
    ({"label": "abc"}, "label"), ({"label": "4"}, "label"), ({"predicted": "-1"}, "predicted"),
    ({"outcome": "bogus"}, "outcome"), ({"size": "501"}, "size"), ({"rows": "0,x"}, "rows"), ({"page": "1.5"}, "page"),
])
def test_the_rows_api_refuses_bad_filters(alice, query, field):
    model = model_with_snapshot(alice)
    evaluation = Job.objects.get(pk=post(signed_in(alice), f"/api/models/{model.pk}/evaluate", {}).json()["id"])
    (evaluation.folder / "evaluation").mkdir(parents=True)
    (evaluation.folder / "evaluation" / "report.json").write_text(json.dumps({"classes": ["a", "b", "c", "d"]}))
    (evaluation.folder / "evaluation" / "results.json").write_text(json.dumps({"rows": []}))
    assert refused(signed_in(alice).get(f"/api/evaluations/{evaluation.pk}/rows", query), field)


def test_the_new_evaluation_page_queues_a_folder_and_shows_field_errors(alice):
    model = model_with_snapshot(alice)
    folder = imports() / "page"
    write_bars(folder / "vertical", [1])
    client = signed_in(alice)
    page = client.get(f"/evaluations/new/?model={model.pk}")
    assert f'<option value="{model.pk}" selected>'.encode() in page.content
    names = re.findall(r'<(?:input|select|textarea)[^>]* name="(\w+)"', page.content.decode())
    names = [name for name in names if name != "csrfmiddlewaretoken"]
    assert names[:3] == ["model", "snapshot", "source"] and names[-4:] == ["device", "gpu_count", "gpu_ids", "priority"], names
    fields = {"model": model.pk, "source": "folder", "top_n": 5, "device": "cpu"}
    bad = client.post("/evaluations/new/", {**fields, "folder": "/etc"})
    assert bad.status_code == 200 and b"not inside the folders" in bad.content
    assert str(imports()).encode() not in bad.content, "the server's roots are not named"
    good = client.post("/evaluations/new/", {**fields, "folder": str(folder)})
    job = Job.objects.get(kind="evaluation")
    assert good["Location"] == f"/jobs/{job.pk}/"
    assert job.params["source"] == {"type": "folder", "path": str(folder.resolve())}


@pytest.mark.parametrize("size, status", [(500, 200), (501, 400)])
def test_a_page_of_rows_holds_at_most_500_and_so_does_a_list_of_row_numbers(alice, size, status):
    """``MAX_PAGE_SIZE`` (500): a page of 500 rows and a list of 500 row
    numbers are given; 501 of either is refused naming its field."""
    model = model_with_snapshot(alice)
    evaluation = Job.objects.get(pk=post(signed_in(alice), f"/api/models/{model.pk}/evaluate", {}).json()["id"])
    (evaluation.folder / "evaluation").mkdir(parents=True)
    (evaluation.folder / "evaluation" / "report.json").write_text(json.dumps({"classes": ["a", "b", "c", "d"]}))
    rows = [{"index": i, "name": f"test #{i}", "label": i % 4, "top": [[i % 4, 0.9]], "error": None} for i in range(600)]
    (evaluation.folder / "evaluation" / "results.json").write_text(json.dumps({"rows": rows}))
    client, url = signed_in(alice), f"/api/evaluations/{evaluation.pk}/rows"
    numbers = ",".join(str(i) for i in range(size - 1, -1, -1))
    for query, field in (({"size": str(size)}, "size"), ({"rows": numbers, "size": "500"}, "rows")):
        answer = client.get(url, query)
        if status == 400:
            assert refused(answer, field)
            continue
        assert answer.status_code == 200, answer.content
        shown = [row["index"] for row in answer.json()["rows"]]
        assert answer.json()["total"] == (600 if field == "size" else 500)
        assert shown == (list(range(500)) if field == "size" else list(range(499, -1, -1)))


@pytest.mark.parametrize("mistakes", [48, 49])
def test_the_mistakes_come_a_page_at_a_time_most_confident_first(alice, mistakes):
    """A page of 48: exactly one page of mistakes, and one more than a page."""
    evaluation = evaluated_split(alice, mistakes)
    client = signed_in(alice)

    def page(number: int) -> dict:
        response = client.get(f"/api/evaluations/{evaluation.pk}/rows", {"list": "mistakes", "page": number, "size": 48})
        assert response.status_code == 200, response.content
        return response.json()

    first, second = page(1), page(2)
    assert first["total"] == second["total"] == mistakes
    assert [row["index"] for row in first["rows"] + second["rows"]] == list(range(mistakes)), "most confident first"
    assert len(first["rows"]) == 48 and len(second["rows"]) == mistakes - 48
    row = first["rows"][0]
    assert row["label_name"] == "horizontal" and row["top"][0]["class"] == "vertical" and row["outcome"] == "wrong"
    assert "must be" in refused(client.get(f"/api/evaluations/{evaluation.pk}/rows", {"list": "everything"}), "list")
