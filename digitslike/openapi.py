"""The OpenAPI 3.1 description of the JSON API, served at /api/openapi.json,
and a page at /api/ that lists it for people. Tests check that every API
route is described here and every described route exists."""

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERRORS = {
    "400": _json(_ref("Error"), "Invalid request; `errors` maps each field to its messages"),
    "401": _json(_ref("Error"), "Not signed in and no valid token"),
    "403": _json(_ref("Error"), "Only the job's owner or staff may do this"),
    "404": _json(_ref("Error"), "No such job"),
    "409": _json(_ref("Error"), "The action does not fit the job's state"),
    "413": _json(_ref("Error"), "The upload is larger than UPLOAD_MAX_BYTES"),
}
JOB_ID = {"name": "job_id", "in": "path", "required": True, "schema": {"type": "integer"}}
SSE = {"description": "Server-Sent Events", "content": {"text/event-stream": {"schema": {"type": "string"}}}}


def _op(summary: str, responses: dict[str, Any], errors: tuple[str, ...] = ("401",), **extra: Any) -> dict[str, Any]:
    return {"summary": summary, "responses": {**responses, **{c: ERRORS[c] for c in errors}}, **extra}


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


SCHEMA: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "digitslike API", "version": "1"},
    "components": {
        "securitySchemes": {
            "session": {"type": "apiKey", "in": "cookie", "name": "sessionid"},
            "token": {"type": "apiKey", "in": "header", "name": "Authorization",
                      "description": "`Token <key>`; make keys on your account page"},
        },
        "schemas": {
            "Error": {"type": "object", "properties": {"error": {"type": "string"}, "errors": {"type": "object"}},
                      "required": ["error"]},
            "JobSummary": {"type": "object", "properties": {
                "id": {"type": "integer"}, "kind": {"type": "string"}, "category": {"type": "string"},
                "name": {"type": "string"}, "group": {"type": "string"}, "owner": {"type": "string"},
                "status": {"enum": ["queued", "waiting", "running", "done", "failed", "aborted"]},
                "progress": {"type": "number"}, "created_at": {"type": "string", "format": "date-time"},
                "started_at": {"type": ["string", "null"]}, "finished_at": {"type": ["string", "null"]},
                "elapsed_seconds": {"type": ["number", "null"]}, "eta_seconds": {"type": ["number", "null"]},
                "queue_position": {"type": ["integer", "null"]}, "url": {"type": "string"}}},
            "Job": {"allOf": [_ref("JobSummary"), {"type": "object", "properties": {
                "notes": {"type": "string"}, "params": {"type": "object"}, "resources": {"type": "object"},
                "held": {"type": "object"}, "worker": {"type": "string"}, "attempt": {"type": "integer"},
                "abort_requested": {"type": "boolean"}, "error": {"type": "string"},
                "history": {"type": "array", "items": {"type": "object", "properties": {
                    "status": {"type": "string"}, "at": {"type": "string"}, "message": {"type": "string"}}}}}}]},
            "NewDeviceCheck": {"type": "object", "required": ["kind", "name", "seconds", "size"], "properties": {
                "kind": {"const": "devicecheck"}, "name": {"type": "string"}, "group": {"type": "string"},
                "notes": {"type": "string"}, "seconds": {"type": "number", "minimum": 0.5, "maximum": 3600},
                "size": {"type": "integer", "minimum": 16, "maximum": 16384},
                "device": {"enum": ["cpu", "gpu"]}, "gpu_count": {"type": "integer", "minimum": 1},
                "gpu_ids": {"type": "string", "description": "comma-separated GPU indices"}}},
            "JobChanges": {"type": "object", "properties": {
                "name": {"type": "string"}, "group": {"type": "string"}, "notes": {"type": "string"}}},
        },
    },
    "security": [{"session": []}, {"token": []}],
    "paths": {
        "/api/me": {"get": _op("The signed-in user", {"200": _json({"type": "object"})})},
        "/api/jobs": {
            "get": _op("List jobs", {"200": _json({"type": "object", "properties": {
                "jobs": {"type": "array", "items": _ref("JobSummary")}}})}, parameters=[
                {"name": n, "in": "query", "schema": {"type": "string"}, "description": d} for n, d in (
                    ("category", "datasets, models or checks"), ("status", "comma-separated statuses"),
                    ("q", "text in name, group, owner or kind"))]),
            "post": _op("Submit a job", {"201": _json(_ref("Job"), "Created and queued")}, ("400", "401"),
                        requestBody=_body(_ref("NewDeviceCheck"))),
        },
        "/api/jobs/bulk": {"post": _op("Abort or delete several jobs", {"200": _json({"type": "object"})},
                                       ("400", "401"), requestBody=_body({"type": "object", "properties": {
                                           "action": {"enum": ["abort", "delete"]},
                                           "ids": {"type": "array", "items": {"type": "integer"}}}}))},
        "/api/jobs/{job_id}": {
            "parameters": [JOB_ID],
            "get": _op("One job with its status history", {"200": _json(_ref("Job"))}, ("401", "404")),
            "patch": _op("Rename, regroup or annotate", {"200": _json(_ref("Job"))}, ("400", "401", "403", "404"),
                         requestBody=_body(_ref("JobChanges"))),
            "delete": _op("Delete a finished job and its folder", {"204": {"description": "Deleted"}},
                          ("401", "403", "404", "409")),
        },
        "/api/jobs/{job_id}/abort": {"parameters": [JOB_ID], "post": _op(
            "Abort a queued, waiting or running job", {"202": _json(_ref("Job"), "Aborted, or abort requested")},
            ("401", "403", "404", "409"))},
        "/api/jobs/{job_id}/clone": {"parameters": [JOB_ID], "post": _op(
            "Submit a copy of the job as your own", {"201": _json(_ref("Job"))}, ("401", "404"))},
        "/api/jobs/{job_id}/log": {"parameters": [JOB_ID], "get": _op(
            "The last lines of the job's log", {"200": _json({"type": "object", "properties": {
                "lines": {"type": "array", "items": {"type": "string"}}}})}, ("400", "401", "404"),
            parameters=[{"name": "lines", "in": "query", "schema": {"type": "integer", "maximum": 5000}}])},
        "/api/jobs/{job_id}/events": {"parameters": [JOB_ID], "get": _op(
            "The job's events: history, then live; resume with Last-Event-ID", {"200": SSE}, ("401",))},
        "/api/events": {"get": _op("Status and progress of all jobs, live, and free devices", {"200": SSE})},
        "/api/resources": {"get": _op("Workers, devices, who holds them, and the queue",
                                      {"200": _json({"type": "object"})})},
        "/api/datasets": {"post": _op(
            "Import a dataset: the New dataset form's fields as JSON (server folder or lists), or as "
            "multipart/form-data with the archive or list files", {"201": _json(_ref("Job"), "Created and queued")},
            ("400", "401", "413"), requestBody={"required": True, "content": {
                "application/json": {"schema": {"type": "object", "required": ["name", "source"], "properties": {
                    "name": {"type": "string"}, "source": {"enum": ["folder", "archive", "lists"]},
                    "train_folder": {"type": "string"}, "image_type": {"enum": ["color", "grayscale"]},
                    "width": {"type": "integer", "default": 256}, "height": {"type": "integer", "default": 256},
                    "resize_mode": {"enum": ["squash", "crop", "fill", "half_crop"]},
                    "val_percent": {"type": "number", "default": 25}, "test_percent": {"type": "number", "default": 0},
                    "encoding": {"enum": ["png", "jpeg", "none"]}}}},
                "multipart/form-data": {"schema": {"type": "object", "properties": {
                    "archive": {"type": "string", "format": "binary"}}}}}})},
        "/api/datasets/{job_id}": {"parameters": [JOB_ID], "get": _op(
            "A dataset job with its manifest (classes, counts per split and class, skipped files, checksums)",
            {"200": _json({"type": "object"})}, ("401", "404"))},
        "/api/folders": {"get": _op(
            "Browse the server folders datasets may be read from", {"200": _json({"type": "object"})},
            ("401", "403"), parameters=[{"name": "path", "in": "query", "schema": {"type": "string"}}])},
    },
}


def schema_view(request: HttpRequest) -> JsonResponse:
    return JsonResponse(SCHEMA)


def docs_view(request: HttpRequest) -> HttpResponse:
    operations = [
        {"method": method.upper(), "path": path, "summary": op["summary"], "codes": sorted(op["responses"])}
        for path, item in SCHEMA["paths"].items()
        for method, op in item.items()
        if method != "parameters"
    ]
    return render(request, "api_docs.html", {"operations": operations})
