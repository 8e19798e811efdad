"""The JSON API: authentication, status codes, validation, and an OpenAPI
schema that covers every API route."""

import json
import re

import pytest
from django.test import Client
from django.urls import URLPattern, get_resolver
from django.utils import timezone

from accounts.models import ApiToken
from jobs.models import Job, JobTransition, Status
from tests.apifuzz import send as stream_request
from tests.clients import signed_in
from web.api import whole_number


def make_job(owner, status=Status.DONE, **fields):
    return Job.objects.create(kind="devicecheck", name=fields.pop("name", "check"), owner=owner, params={},
                              resources={"device": "cpu", "count": 1}, status=status, **fields)



def send(client, method, url, body=None, **headers):
    return getattr(client, method)(url, data=json.dumps(body) if body is not None else "",
                                   content_type="application/json", headers=headers)


def test_without_credentials_every_call_is_401_json(db):
    for url in ["/api/me", "/api/jobs", "/api/jobs/1", "/api/resources", "/api/jobs/1/log", "/api/events"]:
        response = Client().get(url)
        assert response.status_code == 401, url
        assert "error" in response.json()


def test_a_token_signs_requests_and_a_bad_or_revoked_one_is_401(alice):
    token, key = ApiToken.issue(alice, "laptop")
    client = Client()
    assert client.get("/api/me", headers={"Authorization": f"Token {key}"}).json()["username"] == "alice"
    bad = client.get("/api/me", headers={"Authorization": "Token nonsense"})
    assert bad.status_code == 401 and bad.json()["error"] == "The API token is not valid."
    token.delete()
    assert client.get("/api/me", headers={"Authorization": f"Token {key}"}).status_code == 401


def test_token_requests_need_no_csrf_token(alice, transactional_db):
    _, key = ApiToken.issue(alice, "ci")
    client = Client(enforce_csrf_checks=True)
    job = make_job(alice)
    response = send(client, "patch", f"/api/jobs/{job.pk}", {"notes": "from a script"},
                    Authorization=f"Token {key}")
    assert response.status_code == 200 and response.json()["notes"] == "from a script"


def test_a_session_request_without_a_csrf_token_is_refused_in_the_apis_shape(alice, transactional_db):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    refused = send(client, "post", "/api/jobs", {"kind": "devicecheck", "name": "x", "seconds": 1})
    assert refused.status_code == 403 and refused["Content-Type"] == "application/json"
    assert refused.json() == {"error": "CSRF check failed: send the X-CSRFToken header with the csrftoken cookie's "
                                       "value, or use an API token ('Authorization: Token <key>')."}
    assert Job.objects.count() == 0


@pytest.mark.parametrize("field", ["name", "group", "notes"])
@pytest.mark.parametrize("value", [[None, None], {"a": 1}, 7, True])
def test_a_text_field_given_anything_but_text_is_refused(alice, transactional_db, field, value):
    sent = {"kind": "devicecheck", "name": "x", "seconds": 1, field: value}
    refused = send(signed_in(alice), "post", "/api/jobs", sent)
    assert refused.status_code == 400
    assert refused.json()["errors"][field] == [{"message": "Give text here, not a JSON " + (
        "array" if isinstance(value, list) else "object" if isinstance(value, dict) else
        "true or false" if isinstance(value, bool) else "number") + ".", "code": "not_text"}]
    assert Job.objects.count() == 0


def test_creating_a_job_validates_fields_and_returns_201(alice, transactional_db):
    client = signed_in(alice)
    missing = send(client, "post", "/api/jobs", {"kind": "devicecheck"})
    assert missing.status_code == 400 and "name" in missing.json()["errors"]
    wrong_kind = send(client, "post", "/api/jobs", {"kind": "sleep", "name": "x"})
    assert wrong_kind.status_code == 400 and "kind" in wrong_kind.json()["errors"]
    out_of_range = send(client, "post", "/api/jobs", {"kind": "devicecheck", "name": "x", "seconds": 0})
    assert out_of_range.status_code == 400 and "seconds" in out_of_range.json()["errors"]
    not_json = client.post("/api/jobs", data="{", content_type="application/json")
    assert not_json.status_code == 400 and "body" in not_json.json()["errors"]
    assert Job.objects.count() == 0

    created = send(client, "post", "/api/jobs", {"kind": "devicecheck", "name": "first check", "seconds": 1})
    assert created.status_code == 201
    body = created.json()
    assert body["name"] == "first check" and body["status"] == "queued" and body["owner"] == "alice"
    assert [t["status"] for t in body["history"]] == ["queued"]


def test_actions_that_do_not_fit_the_state_are_409(alice):
    client = signed_in(alice)
    done = make_job(alice, Status.DONE)
    running = make_job(alice, Status.RUNNING)
    aborted = send(client, "post", f"/api/jobs/{done.pk}/abort")
    assert aborted.status_code == 409 and "only queued, waiting or running" in aborted.json()["error"]
    deleted = send(client, "delete", f"/api/jobs/{running.pk}")
    assert deleted.status_code == 409 and "abort it before deleting" in deleted.json()["error"]
    assert Job.objects.count() == 2


def test_abort_of_a_queued_job_is_202_and_delete_is_204(alice):
    client = signed_in(alice)
    queued = make_job(alice, Status.QUEUED)
    response = send(client, "post", f"/api/jobs/{queued.pk}/abort")
    assert response.status_code == 202 and response.json()["status"] == "aborted"
    assert send(client, "delete", f"/api/jobs/{queued.pk}").status_code == 204
    assert not Job.objects.exists()


def test_unknown_job_is_404_and_wrong_method_is_405(alice):
    client = signed_in(alice)
    assert send(client, "get", "/api/jobs/999").status_code == 404
    assert send(client, "post", "/api/jobs/999/abort").status_code == 404
    wrong = send(client, "put", "/api/jobs/999")
    assert wrong.status_code == 405 and wrong.json()["allowed"] == ["GET", "PATCH", "DELETE"]


def test_patch_validates_and_saves(alice):
    client = signed_in(alice)
    job = make_job(alice)
    too_long = send(client, "patch", f"/api/jobs/{job.pk}", {"name": "x" * 500})
    assert too_long.status_code == 400 and "name" in too_long.json()["errors"]
    saved = send(client, "patch", f"/api/jobs/{job.pk}", {"name": "renamed", "group": "g1"})
    assert saved.status_code == 200 and (saved.json()["name"], saved.json()["group"]) == ("renamed", "g1")


def test_bulk_reports_each_job(alice, bob):
    client = signed_in(alice)
    mine, theirs, running = make_job(alice), make_job(bob), make_job(alice, Status.RUNNING)
    response = send(client, "post", "/api/jobs/bulk", {"action": "delete", "ids": [mine.pk, theirs.pk, running.pk, 999]})
    results = response.json()["results"]
    assert results[str(mine.pk)] == {"ok": True}
    assert results[str(theirs.pk)]["status"] == 403
    assert results[str(running.pk)]["status"] == 409
    assert results["999"]["status"] == 404
    assert set(Job.objects.values_list("pk", flat=True)) == {theirs.pk, running.pk}
    assert send(client, "post", "/api/jobs/bulk", {"action": "explode", "ids": []}).status_code == 400


def test_bulk_refuses_an_action_of_the_wrong_type_and_reports_ids_no_job_can_have(alice):
    client = signed_in(alice)
    for action in (["delete"], {"delete": True}):
        refused = send(client, "post", "/api/jobs/bulk", {"action": action, "ids": []})
        assert refused.status_code == 400 and refused.json()["errors"] == {"action": ["Choose abort or delete."]}
    huge = send(client, "post", "/api/jobs/bulk", {"action": "delete", "ids": [10**30, -1]}).json()["results"]
    assert {key: entry["status"] for key, entry in huge.items()} == {str(10**30): 404, "-1": 404}


def test_an_address_no_route_matches_or_a_body_that_cannot_be_read_is_a_json_error(alice):
    client = signed_in(alice)
    for url in ("/api/jobs/-1", "/api/nothing"):
        missing = client.get(url)
        assert missing.status_code == 404 and url in missing.json()["error"]
    unreadable = client.post("/api/datasets", "garbage", content_type="multipart/form-data")
    assert unreadable.status_code == 400 and "could not be read" in unreadable.json()["error"]
    assert "<html" in client.get("/no-such-page/").content.decode(), "pages keep their HTML error page"


@pytest.mark.parametrize("since", ["²", "9" * 5000, "-1"])
def test_a_job_stream_takes_any_last_event_id_and_starts_from_the_first_event(alice, since):
    job = make_job(alice)
    response = stream_request(signed_in(alice), "GET", f"/api/jobs/{job.pk}/events", headers={"Last-Event-ID": since})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/event-stream")


@pytest.mark.parametrize(("text", "number"), [("0", 0), ("42", 42), ("100", 100), ("101", None), ("²", None),
                                              ("-1", None), (" 1", None), ("9" * 5000, None), ("", None)])
def test_whole_numbers_in_queries_are_ascii_digits_within_their_maximum(text, number):
    assert whole_number(text, 100) == number


def test_listing_filters_by_text_status_and_category(alice, bob):
    client = signed_in(alice)
    make_job(alice, name="resnet sweep", group="cifar")
    make_job(bob, Status.FAILED, name="other")
    assert [j["name"] for j in client.get("/api/jobs?q=cifar").json()["jobs"]] == ["resnet sweep"]
    assert [j["name"] for j in client.get("/api/jobs?q=bob").json()["jobs"]] == ["other"]
    assert [j["name"] for j in client.get("/api/jobs?status=failed").json()["jobs"]] == ["other"]
    assert client.get("/api/jobs?category=datasets").json()["jobs"] == []
    assert len(client.get("/api/jobs?category=checks").json()["jobs"]) == 2


def test_job_detail_has_history_times_and_queue_position(alice):
    job = make_job(alice, Status.QUEUED)
    JobTransition.objects.create(job=job, status=Status.QUEUED, message="Submitted")
    body = signed_in(alice).get(f"/api/jobs/{job.pk}").json()
    assert body["queue_position"] == 1
    assert body["history"][0]["status"] == "queued" and body["history"][0]["at"]


def test_elapsed_time_counts_every_attempt_and_the_history_numbers_them(alice):
    job = make_job(alice, Status.DONE)
    start = timezone.now() - timezone.timedelta(hours=1)
    for minute, status in [(0, Status.QUEUED), (1, Status.RUNNING), (11, Status.ABORTED), (20, Status.QUEUED),
                           (21, Status.RUNNING), (26, Status.DONE)]:
        JobTransition.objects.create(job=job, status=status, at=start + timezone.timedelta(minutes=minute))
    body = signed_in(alice).get(f"/api/jobs/{job.pk}").json()
    assert body["elapsed_seconds"] == body["ended_runs_seconds"] == 15 * 60
    assert [t["attempt"] for t in body["history"]] == [None, 1, None, None, 2, None]
    page = signed_in(alice).get(f"/jobs/{job.pk}/").content.decode()
    assert "Attempt 1" in page and "Attempt 2" in page


def test_elapsed_time_of_a_running_job_adds_the_current_run_to_the_ended_ones(alice):
    job = make_job(alice, Status.RUNNING)
    now = timezone.now()
    for minutes_ago, status in [(30, Status.RUNNING), (20, Status.FAILED), (10, Status.RUNNING)]:
        JobTransition.objects.create(job=job, status=status, at=now - timezone.timedelta(minutes=minutes_ago))
    assert job.ended_runs_seconds() == 10 * 60
    assert 20 * 60 <= job.elapsed_seconds() < 20 * 60 + 30


def test_the_log_endpoint_returns_the_tail(alice, settings):
    job = make_job(alice)
    job.folder.mkdir(parents=True)
    (job.folder / "log.txt").write_text("".join(f"line {i}\n" for i in range(300)))
    client = signed_in(alice)
    assert client.get(f"/api/jobs/{job.pk}/log?lines=2").json()["lines"] == ["line 298", "line 299"]
    assert client.get(f"/api/jobs/{job.pk}/log?lines=two").status_code == 400


def _api_routes():
    """Every URL under /api/ in OpenAPI's path syntax."""
    from digitslike.urls import urlpatterns

    routes = set()

    def walk(patterns, prefix):
        for p in patterns:
            route = prefix + str(p.pattern)
            if isinstance(p, URLPattern):
                routes.add("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route))
            else:
                walk(p.url_patterns, route)

    walk(urlpatterns, "")
    return {r for r in routes if r.startswith("/api/") and r not in ("/api/", "/api/openapi.json")}


def test_the_openapi_schema_covers_every_api_route(alice):
    schema = signed_in(alice).get("/api/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    assert _api_routes() == set(schema["paths"])
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method != "parameters":
                assert operation["summary"] and operation["responses"], (path, method)
    assert get_resolver().resolve("/api/jobs")


@pytest.mark.parametrize("path", ["/api/", "/api/openapi.json"])
def test_the_schema_and_its_docs_page_are_served(alice, path):
    assert signed_in(alice).get(path).status_code == 200


def test_a_nul_character_in_an_address_a_query_or_a_json_body_is_refused_before_any_query(alice):
    client = signed_in(alice)
    for url in ("/api/jobs?q=a%00b", "/api/groups/a%00b", "/api/compare/%00", "/api/jobs?%00=1"):
        refused = client.get(url)
        assert refused.status_code == 400 and "NUL character" in refused.json()["error"], url
    page = client.get("/?q=%00")
    assert page.status_code == 400 and b"NUL character" in page.content
    body = send(client, "post", "/api/jobs", {"kind": "devicecheck", "name": "ok", "notes": {"deep": ["a\x00"]}})
    assert body.status_code == 400 and body.json()["errors"] == {"notes": ["Null characters are not allowed."]}


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_number_that_is_not_finite_anywhere_in_a_json_body_is_refused_before_any_query(alice, number):
    body = json.dumps({"name": "m", "lr_policy": {"name": "step", "milestones_percent": ["N"]}}).replace('"N"', number)
    refused = signed_in(alice).post("/api/models", data=body, content_type="application/json")
    assert refused.status_code == 400
    assert refused.json()["errors"] == {"lr_policy": ["Numbers must be finite (not NaN or infinite)."]}
    assert not Job.objects.exists()


@pytest.mark.parametrize("asked, given", [(5000, 5000), (5001, 5000)])
def test_the_log_endpoint_gives_at_most_5000_lines(alice, asked, given):
    """``MAX_LOG_LINES`` (5000): a longer tail asked for is cut to it."""
    job = make_job(alice)
    job.folder.mkdir(parents=True)
    (job.folder / "log.txt").write_text("".join(f"{i}\n" for i in range(6000)))
    lines = signed_in(alice).get(f"/api/jobs/{job.pk}/log?lines={asked}").json()["lines"]
    assert lines == [str(i) for i in range(6000 - given, 6000)]


@pytest.mark.parametrize("written", [200, 201])
def test_the_job_page_shows_the_last_200_log_lines(alice, written):
    """``LOG_TAIL_LINES`` (200): the page's log holds the last 200 lines."""
    job = make_job(alice)
    job.folder.mkdir(parents=True)
    (job.folder / "log.txt").write_text("".join(f"line {i:04d}\n" for i in range(written)))
    page = signed_in(alice).get(f"/jobs/{job.pk}/").content.decode()
    shown = re.findall(r"line (\d{4})", page)
    assert shown == [f"{i:04d}" for i in range(written - 200, written)]


@pytest.mark.parametrize("method, path, allowed", [
    ("put", "/api/jobs/999", "GET, PATCH, DELETE"),
    ("get", "/api/jobs/999/abort", "POST"),
    ("delete", "/api/datasets", "POST"),
    ("get", "/api/models/999/classify", "POST"),
    ("patch", "/api/evaluations", "POST"),
])
def test_a_wrong_method_is_405_naming_the_allowed_ones_in_the_allow_header(alice, method, path, allowed):
    wrong = send(signed_in(alice), method, path)
    assert wrong.status_code == 405
    assert wrong["Allow"] == allowed
    assert wrong.json()["error"].startswith(f"Method {method.upper()} is not allowed here")
