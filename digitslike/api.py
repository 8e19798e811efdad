"""What every JSON API view shares: authentication (session or token) with
401 rather than a redirect, method checks, JSON bodies, and errors as JSON
with the right status code."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

from jobs.services import ActionError


class BadRequest(Exception):
    def __init__(self, errors: dict[str, Any]) -> None:
        super().__init__(str(errors))
        self.errors = errors


def json_body(request: HttpRequest) -> dict[str, Any]:
    if not request.body:
        return {}
    try:
        data = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest({"body": ["The request body is not valid JSON."]}) from None
    if not isinstance(data, dict):
        raise BadRequest({"body": ["The request body must be a JSON object."]})
    return data


def error(message: str, status: int, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def api(*methods: str) -> Callable:
    """Decorate a JSON view that needs a signed-in user and takes ``methods``."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if getattr(request, "token_rejected", False):
                return error("The API token is not valid.", 401)
            if not request.user.is_authenticated:
                return error("Authentication required: sign in, or send 'Authorization: Token <key>'.", 401)
            if request.method not in methods:
                return error(f"Method {request.method} is not allowed here.", 405, allowed=list(methods))
            try:
                return view(request, *args, **kwargs)
            except BadRequest as exc:
                return error("The request is not valid.", 400, errors=exc.errors)
            except ActionError as exc:
                return error(exc.message, exc.status)
            except Http404 as exc:
                return error(str(exc) or "Not found.", 404)

        return wrapper

    return decorate
