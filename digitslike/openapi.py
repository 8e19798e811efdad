"""The OpenAPI 3.1 description of the JSON API, served at /api/openapi.json,
and a page at /api/ that lists it for people. Each installed app describes
its own routes in its ``openapi.py`` (``PATHS``, ``SCHEMAS``, and in
``SUBMITTED`` the bodies ``POST /api/jobs`` takes for its job kinds); this
module puts them together in the apps' order, so a new app's routes appear
without editing it. Tests check that every API route is described and every
described route exists."""

from importlib import import_module
from importlib.util import find_spec
from typing import Any

from django.apps import apps
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from web.apischema import ref


def _app_parts() -> list[Any]:
    return [import_module(f"{config.name}.openapi") for config in apps.get_app_configs()
            if find_spec(f"{config.name}.openapi") is not None]


def _schema() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {
        "Error": {"type": "object", "properties": {"error": {"type": "string"}, "errors": {"type": "object"}},
                  "required": ["error"]},
    }
    submitted: list[str] = []
    for part in _app_parts():
        paths.update(getattr(part, "PATHS", {}))
        schemas.update(getattr(part, "SCHEMAS", {}))
        submitted += getattr(part, "SUBMITTED", [])
    schemas["NewJob"] = {"oneOf": [ref(name) for name in submitted]}
    return {
        "openapi": "3.1.0",
        "info": {"title": "digitslike API", "version": "1"},
        "components": {
            "securitySchemes": {
                "session": {"type": "apiKey", "in": "cookie", "name": "sessionid"},
                "token": {"type": "apiKey", "in": "header", "name": "Authorization",
                          "description": "`Token <key>`; make keys on your account page"},
            },
            "schemas": schemas,
        },
        "security": [{"session": []}, {"token": []}],
        "paths": paths,
    }


SCHEMA: dict[str, Any] = _schema()


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
