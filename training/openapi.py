"""The training app's part of the API description: creating models (the
New model form's fields, with their types, bounds and defaults generated
from the form), the learning-rate preview, a run's metrics and profile, and
a group's runs."""

from typing import Any

from django import forms

from trainer.catalog import SOLVERS
from trainer.jobfiles import BEST_CHECKPOINT
from trainer.tasks import EVERY_SERIES, TASKS
from training.forms import NewModelForm, ScheduleForm
from training.forms.stopping import EARLY_STOPPING
from training.jsondata import defaults
from web.apischema import GROUP, GROUP_OWNER, JOB_ID, body, json_answer, operation, ref

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
    "early_stopping": {"description": f"{', '.join(key for key, _ in EARLY_STOPPING)} (with patience), "
                                      "or {metric, patience}"},
    "averaging": {"description": "none, ema or lookahead (with average_decay, average_every), or {kind, decay, every}"},
}
_ADDED: dict[str, dict[str, Any]] = {
    "dataset": {"type": "integer", "description": "a done dataset job"},
    "scale_lr": {"description": "linear scaling rule with warmup on several GPUs"},
    "seed": {"description": "left out: a random one, recorded"},
    "solver": {"enum": [name for name, _label in SOLVERS]},
    "standard_network": {"enum": [name for task in TASKS.values() for name in task.networks],
                         "description": "one of the dataset's task's networks"},
    "previous_job": {"description": "an earlier model's job (or give `pretrained`)"},
    "backbone_model": {"description": "a done pretrained model whose classifier weights start a detector's or a "
                                      "segmenter's backbone (a ResNet-50 for the ResNet-50 detectors, DeepLabV3 and "
                                      "FCN ResNet-50; a MobileNetV3-Large for Faster R-CNN MobileNetV3-Large FPN, "
                                      "LR-ASPP and DeepLabV3 MobileNetV3-Large)"},
    "pretrained_model": {"description": "a done pretrained model's job (or give `network: {source: pretrained, id}`)"},
}
_JSON_ONLY: dict[str, Any] = {
    "network": {"type": "object", "description": "{source: standard, name} (a network of the dataset's task; "
                                                 "object detection's models are standard networks alone) | "
                                                 "{source: layers, text} | "
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

# A snapshot of a model, as the apps that act on one take it.
SNAPSHOT_BODY = {"type": "object", "properties": {"snapshot": {
    "type": "string", "description": "a snapshot file of the model, e.g. epoch-3.pt or checkpoints/epoch-3.pt; "
                                     "empty: the best one"}}}

SCHEMAS: dict[str, Any] = {
    "Point": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "number"}, {"type": "number"}],
              "description": "[step, epoch, value]"},
    "Metrics": {"type": "object", "properties": {
        "series": {"type": "object", "description": "each series downsampled to at most `points` points, keeping "
                   "the lowest and highest point of each bucket of steps", "properties": {
                       name: {"type": "array", "items": ref("Point")} for name in EVERY_SERIES}},
        "snapshots": {"type": "array", "items": {"type": "object", "properties": {
            "step": {"type": "integer"}, "epoch": {"type": "number"}, "file": {"type": "string"},
            "metrics": {"type": "object"}, "best": {"type": "boolean"}, "is_best": {"type": "boolean"}}}},
        "best": {"type": ["object", "null"]}, "result": {"type": ["object", "null"]}}},
}

SEARCH_ID = {"name": "search_id", "in": "path", "required": True, "schema": {"type": "integer"}}

PATHS: dict[str, Any] = {
    "/api/jobs/{job_id}/metrics": {"parameters": [JOB_ID], "get": operation(
        "A training job's curves, snapshots, best snapshot and result", {"200": json_answer(ref("Metrics"))},
        ("400", "401", "404"), parameters=[{"name": "points", "in": "query", "schema": {
            "type": "integer", "default": 1000, "maximum": 10000}, "description": "points per series"}])},
    "/api/jobs/{job_id}/profile": {"parameters": [JOB_ID], "post": operation(
        "Profile a few steps of a running training job (a `profile` event reports the result)",
        {"202": json_answer({"type": "object"}, "Requested")}, ("401", "403", "404", "409"))},
    "/api/groups/{owner}/{group}": {
        "parameters": [GROUP_OWNER, GROUP],
        "get": operation("A group's jobs with their settings, best metrics and validation curves",
                         {"200": json_answer({"type": "object"})}, ("400", "401", "404"),
                         parameters=[{"name": "points", "in": "query", "schema": {"type": "integer", "default": 500}}])},
    "/api/compare": {"get": operation(
        "Models side by side: each run's settings (flattened, those that differ first), final and best metrics and "
        "curves downsampled on the server (min and max per bucket); ids, group and the filter select together",
        {"200": json_answer({"type": "object", "properties": {
            "count": {"type": "integer"}, "url": {"type": "string", "description": "the Compare page of this selection"},
            "api": {"type": "string", "description": "this answer's address"},
            "curves": {"type": ["array", "null"], "items": {"type": "string"},
                       "description": "the metrics whose curves the runs carry; null: all"},
            "points": {"type": "integer", "description": "points per curve"},
            "settings": {"type": "array", "items": {"type": "object", "properties": {
                "key": {"type": "string"}, "differs": {"type": "boolean"}, "numeric": {"type": "boolean"},
                "log": {"type": "boolean", "description": "values spanning 100× or more"}}}},
            "metrics": {"type": "array", "items": {"type": "object", "properties": {
                "key": {"type": "string"}, "label": {"type": "string"}, "higher": {"type": "boolean"}}}},
            "runs": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "integer"}, "name": {"type": "string"},
                "label": {"type": "string", "description": "what differs, e.g. lr 0.01, batch_size 128"},
                "settings": {"type": "object"}, "final": {"type": "object"}, "best": {"type": "object"},
                "curves": {"type": "object", "description": "metric -> [[epoch, value], ...]"}}}}}})},
        ("400", "401"), parameters=[
            {"name": "ids", "in": "query", "schema": {"type": "string"}, "description": "job numbers, comma-separated"},
            {"name": "group", "in": "query", "schema": {"type": "string"}, "description": "owner/group"},
            {"name": "q", "in": "query", "schema": {"type": "string"}, "description": "text in name, group, owner"},
            {"name": "status", "in": "query", "schema": {"type": "string"}, "description": "comma-separated statuses"},
            {"name": "points", "in": "query", "schema": {"type": "integer", "maximum": 10000},
             "description": "points per curve (default: a share of 40,000 per metric, 20 to 500)"},
            {"name": "curves", "in": "query", "schema": {"type": "string"},
             "description": "the metrics whose curves to give, comma-separated (default: all)"}])},
    "/api/searches/{search_id}": {
        "parameters": [SEARCH_ID],
        "get": operation("An adaptive search: its space, sampler, pruner, metric, trials (each with its model job, "
                         "state, value, the rung it was stopped at and its validations), the best so far and what "
                         "mattered (fANOVA importances)", {"200": json_answer({"type": "object"})}, ("401", "404"))},
    "/api/searches/{search_id}/more": {
        "parameters": [SEARCH_ID],
        "post": operation("Continue a search with more trials (its owner or staff)",
                          {"200": json_answer({"type": "object"})}, ("400", "401", "403", "404"),
                          requestBody=body({"type": "object", "required": ["trials"], "properties": {
                              "trials": {"type": "integer", "minimum": 1, "maximum": 500}}}))},
    "/api/models": {"post": operation(
        "Create a model: the New model form's fields; several learning rates or batch sizes make one job "
        "each, in one group; search: true with the search_ fields starts an adaptive search instead, and the "
        "answer is {\"search\": …} (as GET /api/searches/{id})", {"201": json_answer({"type": "object", "properties": {
            "jobs": {"type": "array", "items": ref("Job")}, "warning": FEW_STEPS,
            "search": {"type": "object", "description": "with search: true, the search started"}}}, "Created and queued")},
        ("400", "401"), requestBody=body(NEW_MODEL))},
    "/api/lr-preview": {"post": operation(
        "The learning rate at each step for these settings (the New model form's preview)",
        {"200": json_answer(LR_PREVIEW)}, ("400", "401"), requestBody=body({"type": "object", "properties": _POLICY_FIELDS}))},
}
