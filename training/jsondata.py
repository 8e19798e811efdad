"""Form data from a JSON body: the API (and the page's preview requests)
give the New model form's fields as JSON, where values may also come as the
params store them (objects, lists, pairs). What a body leaves out takes the
form's initial value, as on the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django import forms

from jobs.models import Job
from trainer import lr_policy as policies

from .services import PRETRAINED_KIND


def defaults(form_class: type[forms.Form]) -> dict[str, Any]:
    """The initial values the page shows, for what an API call leaves out."""
    return {name: field.initial for name, field in form_class.base_fields.items() if field.initial is not None}


def api_data(form_class: type[forms.Form], body: dict[str, Any]) -> dict[str, Any]:
    """Form data for an API call: what the body gives, then for a policy
    parameter left out the chosen policy's own default (exp's gamma is not
    step's), then the page's initial values."""
    given = from_json(body)
    policy = given.get("lr_policy")
    chosen = policies.DEFAULTS.get(policy, {}) if isinstance(policy, str) else {}
    missing = {key: _listed(value) for key, value in chosen.items() if key not in given}
    return {**defaults(form_class), **missing, **given}


def _listed(value: Any) -> Any:
    return ", ".join(str(v) for v in value) if isinstance(value, list | tuple) else value


def from_json(body: dict[str, Any]) -> dict[str, Any]:
    """Form data from an API body, which may also give values as the params
    store them: ``network`` (``{"source": "pretrained", "id": N}`` for a
    pretrained model), ``pretrained``, ``lr_policy``, ``early_stopping`` and
    ``averaging`` as objects, lists of learning rates, batch sizes, milestones and GPU ids,
    and the batch schedule as pairs."""
    data = dict(body)
    network = data.pop("network", None)
    if isinstance(network, dict):
        source = network.get("source")
        data["network_source"] = source
        if source == "standard":
            data["standard_network"] = network.get("name")
        elif source in ("layers", "python"):
            text = network.get("text")
            data[f"{source}_text"] = text if isinstance(text, str) or text is None else json.dumps(text)
        elif source == "pretrained":
            data["pretrained_model"] = network.get("id")
    elif network is not None:
        data["network_source"] = network
    pretrained = data.pop("pretrained", None)
    if isinstance(pretrained, dict) and _is_pretrained_model(pretrained.get("job")):
        data["network_source"] = "pretrained"
        data["pretrained_model"] = pretrained.get("job")
    elif isinstance(pretrained, dict):
        data["network_source"] = "previous"
        data["previous_job"] = pretrained.get("job")
        path = str(pretrained.get("file") or pretrained.get("path") or "")
        data["previous_snapshot"] = _relative_snapshot(path, pretrained.get("job"))
        data["pretrained_mode"] = pretrained.get("mode") or "finetune"
    policy = data.get("lr_policy")
    if isinstance(policy, dict):
        data["lr_policy"] = policy.get("name")
        data.update({k: v for k, v in policy.items() if k in policies.PARAM_DEFAULTS})
    early = data.get("early_stopping")
    if isinstance(early, dict):
        data["early_stopping"] = early.get("metric")
        data["patience"] = early.get("patience", data.get("patience"))
    elif early is None and "early_stopping" in data:
        data["early_stopping"] = "none"
    averaging = data.get("averaging")
    if isinstance(averaging, dict):
        data["averaging"] = averaging.get("kind")
        data["average_decay"] = averaging.get("decay", data.get("average_decay"))
        data["average_every"] = averaging.get("every", data.get("average_every"))
    elif averaging is None and "averaging" in data:
        data["averaging"] = "none"
    if isinstance(data.get("batch_schedule"), list):
        data["batch_schedule"] = ", ".join(f"{pair[0]}:{pair[1]}" if isinstance(pair, list | tuple) and len(pair) == 2
                                           else str(pair) for pair in data["batch_schedule"])
    for key in ("lr", "batch_size", "milestones_percent", "gpu_ids", "search_batch_sizes", "search_translates",
                "search_rotations", "search_scales", "search_color_jitters"):
        if key in data:
            data[key] = _listed(data[key])
    return {k: v for k, v in data.items() if v is not None}


def _is_pretrained_model(job_id: Any) -> bool:
    return isinstance(job_id, int) and Job.objects.filter(pk=job_id, kind=PRETRAINED_KIND).exists()


def _relative_snapshot(path: str, job_id: Any) -> str:
    """A snapshot named by its path in the job's folder or in full."""
    job = Job.objects.filter(pk=job_id).first() if isinstance(job_id, int) else None
    if job is not None and Path(path).is_absolute():
        try:
            return str(Path(path).relative_to(job.folder))
        except ValueError:
            return path
    return path
