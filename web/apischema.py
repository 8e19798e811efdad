"""The pieces every app's part of the OpenAPI description is made of: a
reference to a named schema, a JSON answer, an operation with the errors it
documents, a request body, and the parameters many routes share. Each app
describes its own routes in its ``openapi.py`` (``PATHS``, ``SCHEMAS``);
``digitslike.openapi`` puts them together."""

from typing import Any


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def json_answer(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERRORS = {
    "400": json_answer(ref("Error"), "Invalid request; `errors` maps each field to its messages"),
    "401": json_answer(ref("Error"), "Not signed in and no valid token"),
    "403": json_answer(ref("Error"), "Only the job's owner or staff may do this"),
    "404": json_answer(ref("Error"), "No such job"),
    "409": json_answer(ref("Error"), "The action does not fit the job's state"),
    "413": json_answer(ref("Error"), "The upload is larger than UPLOAD_MAX_BYTES"),
}
JOB_ID = {"name": "job_id", "in": "path", "required": True, "schema": {"type": "integer"}}
MODEL_ID = {**JOB_ID, "name": "model_id"}
GROUP_OWNER = {"name": "owner", "in": "path", "required": True, "schema": {"type": "string"},
               "description": "the user whose group it is: each user's groups are their own"}
GROUP = {"name": "group", "in": "path", "required": True, "schema": {"type": "string"}}
SSE = {"description": "Server-Sent Events", "content": {"text/event-stream": {"schema": {"type": "string"}}}}


def operation(summary: str, responses: dict[str, Any], errors: tuple[str, ...] = ("401",),
              **extra: Any) -> dict[str, Any]:
    return {"summary": summary, "responses": {**responses, **{code: ERRORS[code] for code in errors}}, **extra}


def body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}
