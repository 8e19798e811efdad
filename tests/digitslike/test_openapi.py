"""The API's schema says what the API does: a request body names the
fields the form behind it needs sent (those it requires and gives no
default), an operation that takes a body documents the 400 a bad one gets,
and one about a job by its id the 404 of an id that names none."""

from __future__ import annotations

import pytest
from django import forms

from datasets.detection_form import DetectionDatasetForm
from datasets.forms import DatasetForm
from digitslike.openapi import SCHEMA
from inference.evaluate.forms import EvaluationForm
from training.forms import NewModelForm

METHODS = ("get", "post", "put", "patch", "delete")


def operations():
    for path, item in SCHEMA["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def must_send(form_class: type[forms.Form]) -> set[str]:
    """What the API cannot fill in: required, with no initial value."""
    return {name for name, field in form_class.base_fields.items() if field.required and field.initial is None}


@pytest.mark.parametrize("path, form_class, also", [
    ("/api/datasets", DatasetForm, set()),
    ("/api/datasets", DetectionDatasetForm, set()),
    ("/api/models", NewModelForm, {"dataset"}),  # required by the form's own check
    ("/api/evaluations", EvaluationForm, set()),
])
def test_each_request_body_requires_what_its_form_needs_sent(path, form_class, also):
    body = SCHEMA["paths"][path]["post"]["requestBody"]
    assert body["required"] is True
    for content_type, media in body["content"].items():
        schema = media["schema"]
        schema = SCHEMA["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema
        assert must_send(form_class) | also <= set(schema.get("required", [])), (path, content_type)


def test_every_operation_that_takes_a_body_documents_400():
    missing = [(path, method) for path, method, operation in operations()
               if "requestBody" in operation and "400" not in operation["responses"]]
    assert not missing


def test_every_operation_on_a_job_by_its_id_documents_404():
    missing = [(path, method) for path, method, operation in operations()
               if "{job_id}" in path and "404" not in operation["responses"]]
    assert not missing
