"""The OpenAPI 3.1 description of the JSON API, served at /api/openapi.json,
and a page at /api/ that lists it for people. Tests check that every API
route is described here and every described route exists.

Over 400 lines: one schema for every app's endpoints, most of it data (what
can be generated from the forms is); splitting it per app would scatter one
document that the tests hold against the URL table as a whole."""

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from trainer.catalog import NETWORKS, SOLVERS
from trainer.eventkinds import SERIES
from trainer.jobfiles import BEST_CHECKPOINT
from training.forms import NewModelForm, ScheduleForm
from training.jsondata import defaults


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


# What the forms' fields cannot say themselves: the other shapes a JSON body
# may give (``training.jsondata``), which replace the field's own type, and
# descriptions and choices filled in per request, added to it.
_NUMBERS = {"description": "one number, or several (a list, or text separated by commas) for a sweep"}
_SHAPES: dict[str, dict[str, Any]] = {
    "lr": _NUMBERS, "batch_size": _NUMBERS,
    "lr_policy": {"description": "a policy name (fixed, step, multistep, exp, inv, poly, sigmoid, cosine, onecycle, linear) "
                                 "with its parameters as fields, or the params' object {name, step_percent, …}"},
    "milestones_percent": {"description": "percentages, e.g. [50, 75] or \"50, 75\""},
    "batch_schedule": {"description": "[[epoch, batch size], …] or \"10:128, 20:256\""},
    "gpu_ids": {"description": "GPU indices, a list or comma-separated"},
    "early_stopping": {"description": "none, val_loss or val_top1 (with patience), or {metric, patience}"},
    "averaging": {"description": "none, ema or lookahead (with average_decay, average_every), or {kind, decay, every}"},
}
_ADDED: dict[str, dict[str, Any]] = {
    "dataset": {"type": "integer", "description": "a done dataset job"},
    "scale_lr": {"description": "linear scaling rule with warmup on several GPUs"},
    "seed": {"description": "left out: a random one, recorded"},
    "solver": {"enum": [name for name, _label in SOLVERS]},
    "standard_network": {"enum": list(NETWORKS)},
    "previous_job": {"description": "an earlier model's job (or give `pretrained`)"},
    "pretrained_model": {"description": "a done pretrained model's job (or give `network: {source: pretrained, id}`)"},
}
_JSON_ONLY: dict[str, Any] = {
    "network": {"type": "object", "description": "{source: standard, name} | {source: layers, text} | "
                                                 "{source: python, text} (needs the run_code permission) | "
                                                 "{source: pretrained, id} (a pretrained model, fine-tuned)",
                "default": {"source": NewModelForm.base_fields["network_source"].initial,
                            "name": NewModelForm.base_fields["standard_network"].initial}},
    "pretrained": {"type": ["object", "null"], "description": "start from a snapshot of an earlier model: "
                   f"{{job, file: \"{BEST_CHECKPOINT}\", mode: finetune | continue}}; its network is used"},
}


def _field_schema(field: forms.Field) -> dict[str, Any]:
    """A form field's JSON type: its number bounds, or its choices."""
    if isinstance(field, forms.BooleanField):
        return {"type": "boolean"}
    if isinstance(field, forms.ChoiceField):
        return {"enum": [value for value, _label in field.choices]} if field.choices else {"type": "string"}
    if isinstance(field, forms.IntegerField):  # FloatField is one too
        kind = "number" if isinstance(field, forms.FloatField) else "integer"
        bounds = {"minimum": field.min_value, "maximum": field.max_value}
        return {"type": kind if field.required else [kind, "null"],
                **{key: value for key, value in bounds.items() if value is not None}}
    return {"type": "string"}


def _json_value(value: Any) -> Any:
    """A form's initial text as JSON gives it: "64" is 64, "0.01" is 0.01."""
    if isinstance(value, str):
        for number in (int, float):
            try:
                return number(value)
            except ValueError:
                continue
    return value


def form_properties(form_class: type[forms.Form]) -> dict[str, Any]:
    """The schema of each field of ``form_class``, its default the form's initial value."""
    initial = defaults(form_class)
    properties = {}
    for name, field in form_class.base_fields.items():
        schema = dict(_SHAPES[name]) if name in _SHAPES else {**_field_schema(field), **_ADDED.get(name, {})}
        if name in initial:
            schema = {**schema, "default": _json_value(initial[name])}
        properties[name] = schema
    return properties


_POLICY_FIELDS = form_properties(ScheduleForm)
NEW_MODEL: dict[str, Any] = {"type": "object", "required": ["name", "dataset"],
                             "properties": {**form_properties(NewModelForm), **_JSON_ONLY}}
FEW_STEPS = {"type": "string", "description": "Only when the (first) run takes fewer than 100 steps: says so, "
                                            "with a batch size and a number of epochs that make 100"}
LR_PREVIEW = {"type": "object", "properties": {
    "points": {"type": "array", "items": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "number"}]},
               "description": "[step, learning rate]"},
    "effective_lr": {"type": "number"}, "total_steps": {"type": "integer"}, "description": {"type": "string"},
    "world_size": {"type": "integer"}, "warmup_percent": {"type": "number"}, "warning": FEW_STEPS}}


# Evaluations (the inference app): evaluate a model, classify many, reports, Compare.
EVAL_SPLIT = {"type": "object", "properties": {
    "split": {"enum": ["val", "test"], "default": "val"},
    "snapshot": {"type": "string", "description": "a snapshot file of the model, e.g. epoch-3.pt; empty: the best"}}}
EVAL_CREATED = _json({"allOf": [_ref("Job"), {"type": "object", "properties": {"note": {
    "type": "string", "description": "what to know, e.g. that the model is still training and its newest "
                                     "snapshot is used"}}}]}, "Created and queued")
NEW_EVALUATION = {"type": "object", "required": ["model", "source"], "properties": {
    "model": {"type": "integer", "description": "a training job"}, "snapshot": EVAL_SPLIT["properties"]["snapshot"],
    "source": {"enum": ["split", "list", "folder", "archive"]}, "split": EVAL_SPLIT["properties"]["split"],
    "list_text": {"type": "string", "description": "`path [label]` a line; the label a class name or number"},
    "prefix": {"type": "string", "description": "a server folder for the list's relative paths"},
    "folder": {"type": "string", "description": "a server folder below DATASET_ROOTS; subfolders named after "
                                                "classes give the labels"},
    "top_n": {"type": "integer", "minimum": 1, "maximum": 100, "default": 5},
    "name": {"type": "string"}, "group": {"type": "string"}, "notes": {"type": "string"},
    "device": {"enum": ["cpu", "gpu"]}}}
EVAL_REPORT = {"type": "object", "properties": {
    "id": {"type": "integer"}, "status": {"type": "string"}, "model": {"type": ["integer", "null"]},
    "note": {"type": "string"},
    "report": {"type": ["object", "null"], "description": "null until done: classes, count, classified, unreadable, "
               "labelled, top1, top5, per_class [{class, count, predicted, precision, recall, accuracy}], confusion "
               "(rows: true class, columns: predicted), mistakes (row numbers, most confident first), top_n "
               "{n, classes: [{most, least}]}, snapshot, warnings"}}}
EVAL_ROWS_QUERY = [{"name": name, "in": "query", "schema": schema, "description": text} for name, schema, text in (
    ("label", {"type": "integer"}, "true class index"), ("predicted", {"type": "integer"}, "top-1 class index"),
    ("outcome", {"enum": ["correct", "wrong", "unlabelled", "unreadable"]}, ""),
    ("rows", {"type": "string"}, "row numbers separated by commas (at most 500), in their order"),
    ("list", {"enum": ["mistakes"]}, "the report's mistakes, most confident first, a page at a time"),
    ("page", {"type": "integer", "default": 1}, ""), ("size", {"type": "integer", "default": 50, "maximum": 500}, ""))]
GROUP_OWNER = {"name": "owner", "in": "path", "required": True, "schema": {"type": "string"},
               "description": "the user whose group it is: each user's groups are their own"}
EVAL_GROUP = {"name": "group", "in": "path", "required": True, "schema": {"type": "string"}}

EVALUATION_PATHS: dict[str, Any] = {
    "/api/models/{model_id}/evaluate": {
        "parameters": [{**JOB_ID, "name": "model_id"}],
        "post": _op("Evaluate a model on its dataset's validation or test split", {"201": EVAL_CREATED},
                    ("400", "401", "404"), requestBody=_body(EVAL_SPLIT))},
    "/api/evaluations": {"post": _op(
        "Classify many: a model on a text list, a server folder or an uploaded archive (multipart), or a split",
        {"201": EVAL_CREATED}, ("400", "401", "413"), requestBody={"required": True, "content": {
            "application/json": {"schema": NEW_EVALUATION},
            "multipart/form-data": {"schema": {"type": "object", "required": ["model"], "properties": {
                "model": {"type": "integer"}, "archive": {"type": "string", "format": "binary"},
                "list_file": {"type": "string", "format": "binary"}}}}}})},
    "/api/evaluations/{job_id}/report": {"parameters": [JOB_ID], "get": _op(
        "An evaluation's report", {"200": _json(EVAL_REPORT)}, ("401", "404"))},
    "/api/evaluations/{job_id}/rows": {"parameters": [JOB_ID], "get": _op(
        "An evaluation's images with their top 5, filtered and paged",
        {"200": _json({"type": "object", "properties": {"total": {"type": "integer"}, "rows": {"type": "array"}}})},
        ("400", "401", "404"), parameters=EVAL_ROWS_QUERY)},
    "/api/compare/{owner}/{group}": {
        "parameters": [GROUP_OWNER, EVAL_GROUP],
        "get": _op("The evaluations Compare queued for a group, with their accuracies",
                   {"200": _json({"type": "object"})}),
        "post": _op("Evaluate every model of the group on the same split",
                    {"201": _json({"type": "object", "properties": {"jobs": {"type": "array"},
                                                                    "skipped": {"type": "array"}}})},
                    ("400", "401"), requestBody=_body(EVAL_SPLIT))},
}


# Classify one (the inference app): one image through the warm model server.
CLASSIFY_OPTIONS = {
    "snapshot": EVAL_SPLIT["properties"]["snapshot"],
    "visualize": {"type": "boolean", "default": False,
                  "description": "add every layer (`layers`, `params`, `trainable`) and a saliency map"},
    "class": {"type": "integer", "minimum": 0, "description": "the class of the saliency map; empty: the top class"},
    "layer": {"type": "string", "description": "the convolution the saliency map is computed at (a name from "
              "`saliency.layers`); empty: the deepest whose output is at least 7×7, else the largest"}}
CLASSIFY_JSON = {"type": "object", "description": "one image: `split` and `index` of the model's dataset, or `path`",
                 "properties": {"split": {"enum": ["train", "val", "test"], "default": "val"},
                                "index": {"type": "integer", "minimum": 0},
                                "path": {"type": "string", "description": "an image file below DATASET_ROOTS"},
                                **CLASSIFY_OPTIONS}}
CLASSIFY_TOP = {"type": "array", "items": {"type": "object", "properties": {
    "index": {"type": "integer"}, "class": {"type": "string"}, "probability": {"type": "number"}}}}
CLASSIFY_ANSWER = {"type": "object", "properties": {
    "model": {"type": "integer"}, "snapshot": {"type": "string"},
    "note": {"type": "string", "description": "e.g. that the model is still training and its newest snapshot "
                                              "is used; empty when there is nothing to say"},
    "top": CLASSIFY_TOP, "seen": {"type": "string", "description": "the input as the network saw it, a PNG data URL"},
    "seconds": {"type": "number", "description": "time in the model server"},
    "total_seconds": {"type": "number", "description": "time of the whole request in the web server"},
    "loaded_now": {"type": "boolean", "description": "the model was loaded for this request"},
    "layers": {"type": "array", "description": "with visualize: every layer in order: name, type, output_shape, "
               "params, activations (PNG data URL), activation_stats {mean, std, histogram {edges, counts}}, "
               "weights (null, or shape, mean, std, histogram and for a convolution filters as a PNG data URL)"},
    "params": {"type": "integer"}, "trainable": {"type": "integer"},
    "saliency": {"type": "object", "description": "with visualize, class or layer: the Grad-CAM map over the input",
                 "properties": {"index": {"type": "integer"}, "class": {"type": "string"},
                                "peak": {"type": "array", "items": {"type": "integer"}},
                                "image": {"type": "string", "description": "a PNG data URL"},
                                "layer": {"type": "string", "description": "the convolution it was computed at"},
                                "size": {"type": "array", "items": {"type": "integer"},
                                         "description": "that layer's output, height and width: the map's resolution"},
                                "layers": {"type": "array", "description": "every convolution in the order it runs, "
                                           "{name, size}: the layers that may be chosen"}}}}}

CLASSIFY_PATHS: dict[str, Any] = {
    "/api/models/{model_id}/classify": {
        "parameters": [{**JOB_ID, "name": "model_id"}],
        "post": _op("Classify one image with a model: the top 5, and with visualize every layer and a saliency map",
                    {"200": _json(CLASSIFY_ANSWER),
                     "404": _json(_ref("Error"), "No such model, or its snapshot is gone"),
                     "413": _json(_ref("Error"), "The request is larger than REQUEST_MAX_BYTES"),
                     "503": _json(_ref("Error"), "No model server answers")},
                    ("400", "401"), requestBody={"required": True, "content": {
                        "application/json": {"schema": CLASSIFY_JSON},
                        "multipart/form-data": {"schema": {"type": "object", "properties": {
                            "image": {"type": "string", "format": "binary"}, **CLASSIFY_JSON["properties"]}}}}})},
}

# Model archives and pretrained models (the inference and pretrained apps).
SNAPSHOT_BODY = {"type": "object", "properties": {"snapshot": {
    "type": "string", "description": "a snapshot file of the model, e.g. epoch-3.pt or checkpoints/epoch-3.pt; "
                                     "empty: the best one"}}}
EXPORT_JOB = {"allOf": [_ref("Job"), {"type": "object", "properties": {
    "archive_url": {"type": "string"}, "archive_api": {"type": "string"},
    "ready": {"type": "boolean", "description": "the archive is made and may be downloaded"}}}]}
REUSE_PATHS: dict[str, Any] = {
    "/api/models/{model_id}/export": {
        "parameters": [{**JOB_ID, "name": "model_id"}],
        "post": _op("Export a snapshot as a model archive (safetensors, torch.export program, ONNX, labels, mean, "
                    "preprocessing): the export job, reused while one for the same unchanged snapshot is made or "
                    "under way", {"201": _json(EXPORT_JOB, "Created and queued"), "200": _json(EXPORT_JOB, "Reused")},
                    ("400", "401", "404"), requestBody=_body(SNAPSHOT_BODY))},
    "/api/exports/{job_id}/archive": {"parameters": [JOB_ID], "get": _op(
        "The export job's archive, once made", {"200": {"description": "the archive, named <model>-<snapshot>.zip",
                                                        "content": {"application/zip": {"schema": {
                                                            "type": "string", "format": "binary"}}}}},
        ("401", "404"))},
    "/api/models/{model_id}/pretrained": {
        "parameters": [{**JOB_ID, "name": "model_id"}],
        "post": _op("Make a pretrained model of a snapshot", {"201": _json(_ref("Job"), "Created and queued")},
                    ("400", "401", "404"), requestBody=_body(SNAPSHOT_BODY))},
    "/api/pretrained": {"post": _op(
        "Upload a pretrained model: a model archive, or a PyTorch state dict for a standard network; a job reads "
        "it with weights_only and checks it against the network", {"201": _json(_ref("Job"), "Created and queued")},
        ("400", "401", "413"), requestBody={"required": True, "content": {"multipart/form-data": {"schema": {
            "type": "object", "required": ["name", "weights"], "properties": {
                "name": {"type": "string"}, "weights": {"type": "string", "format": "binary"},
                "network": {"enum": ["", *NETWORKS], "description": "the standard network of a state dict; "
                                                                    "empty for an archive"},
                "group": {"type": "string"}, "notes": {"type": "string"}}}}}})},
}


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
                "queue_position": {"type": ["integer", "null"]}, "url": {"type": "string"},
                "group_url": {"type": ["string", "null"],
                              "description": "the group page (the owner's group of that name), for a job in a group"},
                "sparkline": {"type": "array", "items": {"type": "number"},
                              "description": "a training job's train loss, at most 60 values (min and max per bucket)"}}},
            "Job": {"allOf": [_ref("JobSummary"), {"type": "object", "properties": {
                "notes": {"type": "string"}, "params": {"type": "object"}, "resources": {"type": "object"},
                "held": {"type": "object", "description": "the devices it holds: host, devices, and for a job over "
                         "several machines, nodes (count, rank, and the rendezvous address, port and timeout)"},
                "nodes": {"type": "array", "description": "a job over several machines: its other nodes in the "
                          "latest attempt", "items": {"type": "object", "properties": {
                              "rank": {"type": "integer"}, "status": {"type": "string"}, "host": {"type": "string"},
                              "devices": {"type": "array", "items": {"type": "string"}},
                              "message": {"type": "string"}}}},
                "worker": {"type": "string"}, "attempt": {"type": "integer"},
                "abort_requested": {"type": "boolean"}, "silent_since": {"type": ["string", "null"], "format": "date-time"},
                "restart_requested": {"type": "boolean"}, "error": {"type": "string"},
                "resumable": {"type": "boolean", "description": "an aborted or failed training job with a checkpoint"},
                "history": {"type": "array", "items": {"type": "object", "properties": {
                    "status": {"type": "string"}, "at": {"type": "string"}, "message": {"type": "string"}}}}}}]},
            "NewDeviceCheck": {"type": "object", "required": ["kind", "name", "seconds", "size"], "properties": {
                "kind": {"const": "devicecheck"}, "name": {"type": "string"}, "group": {"type": "string"},
                "notes": {"type": "string"}, "seconds": {"type": "number", "minimum": 0.5, "maximum": 3600},
                "size": {"type": "integer", "minimum": 16, "maximum": 16384},
                "device": {"enum": ["cpu", "gpu"]}, "gpu_count": {"type": "integer", "minimum": 1},
                "gpu_ids": {"type": "string", "description": "comma-separated GPU indices"}}},
            "Point": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "number"}, {"type": "number"}],
                      "description": "[step, epoch, value]"},
            "Metrics": {"type": "object", "properties": {
                "series": {"type": "object", "description": "each series downsampled to at most `points` points, keeping "
                           "the lowest and highest point of each bucket of steps", "properties": {
                               name: {"type": "array", "items": _ref("Point")} for name in SERIES}},
                "snapshots": {"type": "array", "items": {"type": "object", "properties": {
                    "step": {"type": "integer"}, "epoch": {"type": "number"}, "file": {"type": "string"},
                    "metrics": {"type": "object"}, "best": {"type": "boolean"}, "is_best": {"type": "boolean"}}}},
                "best": {"type": ["object", "null"]}, "result": {"type": ["object", "null"]}}},
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
        "/api/jobs/{job_id}/restart": {"parameters": [JOB_ID], "post": _op(
            "Kill the process of a running job that has stopped responding and queue it again, to resume",
            {"202": _json(_ref("Job"), "Restart requested")}, ("401", "403", "404", "409"))},
        "/api/jobs/{job_id}/clone": {"parameters": [JOB_ID], "post": _op(
            "Submit a copy of the job as your own", {"201": _json(_ref("Job"))}, ("401", "404"))},
        "/api/jobs/{job_id}/resume": {"parameters": [JOB_ID], "post": _op(
            "Queue an aborted or failed training job again, to carry on from its last checkpoint",
            {"202": _json(_ref("Job"), "Queued again")}, ("401", "403", "404", "409"))},
        "/api/jobs/{job_id}/metrics": {"parameters": [JOB_ID], "get": _op(
            "A training job's curves, snapshots, best snapshot and result", {"200": _json(_ref("Metrics"))},
            ("400", "401", "404"), parameters=[{"name": "points", "in": "query", "schema": {
                "type": "integer", "default": 1000, "maximum": 10000}, "description": "points per series"}])},
        "/api/jobs/{job_id}/profile": {"parameters": [JOB_ID], "post": _op(
            "Profile a few steps of a running training job (a `profile` event reports the result)",
            {"202": _json({"type": "object"}, "Requested")}, ("401", "403", "404", "409"))},
        "/api/groups/{owner}/{group}": {"parameters": [GROUP_OWNER, EVAL_GROUP],
                                "get": _op("A group's jobs with their settings, best metrics and validation curves",
                                           {"200": _json({"type": "object"})}, ("400", "401", "404"),
                                           parameters=[{"name": "points", "in": "query",
                                                        "schema": {"type": "integer", "default": 500}}])},
        "/api/jobs/{job_id}/log": {"parameters": [JOB_ID], "get": _op(
            "The last lines of the job's log", {"200": _json({"type": "object", "properties": {
                "lines": {"type": "array", "items": {"type": "string"}}}})}, ("400", "401", "404"),
            parameters=[{"name": "lines", "in": "query", "schema": {"type": "integer", "maximum": 5000}}])},
        "/api/jobs/{job_id}/events": {"parameters": [JOB_ID], "get": _op(
            "The job's events: history, then live; resume with Last-Event-ID", {"200": SSE}, ("401", "404"))},
        "/api/events": {"get": _op("Status and progress of all jobs, live, and free devices", {"200": SSE})},
        "/api/resources": {"get": _op("Workers, devices, who holds them, and the queue",
                                      {"200": _json({"type": "object"})})},
        "/api/datasets": {"post": _op(
            "Import a dataset: the New dataset form's fields as JSON (server folder or lists), or as "
            "multipart/form-data with the archive or list files (the fields sent before the file are checked before it "
            "is read: send them first and a mistake costs no upload)", {"201": _json(_ref("Job"), "Created and queued")},
            ("400", "401", "413"), requestBody={"required": True, "content": {
                "application/json": {"schema": {"type": "object", "required": ["name", "source"], "properties": {
                    "name": {"type": "string"}, "source": {"enum": ["folder", "archive", "lists"]},
                    "train_folder": {"type": "string"}, "image_type": {"enum": ["color", "grayscale"]},
                    "width": {"type": "integer", "default": 256}, "height": {"type": "integer", "default": 256},
                    "resize_mode": {"enum": ["squash", "crop", "fill", "half_crop"]},
                    "val_percent": {"type": "number", "default": 25}, "test_percent": {"type": "number", "default": 0},
                    "encoding": {"enum": ["png", "jpeg", "none"]}}}},
                "multipart/form-data": {"schema": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "archive": {"type": "string", "format": "binary"}}}}}})},
        "/api/datasets/{job_id}": {"parameters": [JOB_ID], "get": _op(
            "A dataset job with its manifest (classes, counts per split and class, skipped files, checksums)",
            {"200": _json({"type": "object"})}, ("401", "404"))},
        "/api/folders": {"get": _op(
            "Browse the server folders datasets may be read from", {"200": _json({"type": "object"})},
            ("401", "403"), parameters=[{"name": "path", "in": "query", "schema": {"type": "string"}}])},
        "/api/models": {"post": _op(
            "Create a model: the New model form's fields; several learning rates or batch sizes make one job "
            "each, in one group", {"201": _json({"type": "object", "properties": {
                "jobs": {"type": "array", "items": _ref("Job")}, "warning": FEW_STEPS}}, "Created and queued")},
            ("400", "401"), requestBody=_body(NEW_MODEL))},
        "/api/lr-preview": {"post": _op(
            "The learning rate at each step for these settings (the New model form's preview)",
            {"200": _json(LR_PREVIEW)}, ("400", "401"), requestBody=_body({"type": "object", "properties": _POLICY_FIELDS}))},
        **EVALUATION_PATHS,
        **CLASSIFY_PATHS,
        **REUSE_PATHS,
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
