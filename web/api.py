"""What every JSON API view shares: authentication (session or token) with
401 rather than a redirect, method checks, JSON bodies, and errors as JSON
with the right status code.

The error shape, in every app: ``{"error": "<a sentence for the user>"}``,
with ``"errors": {field: [messages]}`` when fields are wrong. Views answer it
with ``error()``, or raise ``BadRequest`` (fields) or ``ActionError`` (a
request that does not fit an object's state or the user's rights), which
``@api`` turns into it; page views show an ``ActionError``'s message too."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import csrf, defaults

from trainer.tasks import UnknownTask

API_PREFIX = "/api/"
# The most characters of one message in an error answer: messages may show a
# value the user sent (Django's "Select a valid choice. <value> is not one
# of…"), and the answer need not be as large as the request.
MESSAGE_MAX_CHARS = 1000


class ActionError(Exception):
    """A request that does not fit an object's state (409 by default) or the
    user's rights (403); its message is shown to the user as it is."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class BadRequest(Exception):
    def __init__(self, errors: dict[str, Any]) -> None:
        super().__init__(str(errors))
        self.errors = errors


def bad_request_message(errors: dict[str, Any]) -> str:
    """One line for the top of a form or an API answer: each field's
    messages after its name (a form-wide message on its own)."""
    messages = []
    for field, found in errors.items():
        for entry in found if isinstance(found, list) else [found]:
            text = entry["message"] if isinstance(entry, dict) else str(entry)
            messages.append(text if field == "__all__" else f"{field}: {text}")
    return " ".join(messages) or "The request is not valid."


def json_body(request: HttpRequest) -> dict[str, Any]:
    if not request.body:
        return {}
    try:
        data = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest({"body": ["The request body is not valid JSON."]}) from None
    if not isinstance(data, dict):
        raise BadRequest({"body": ["The request body must be a JSON object."]})
    if holding_nul := [str(key) for key, value in data.items() if _holds(_is_nul, key) or _holds(_is_nul, value)]:
        raise BadRequest({key: ["Null characters are not allowed."] for key in holding_nul})
    if not_finite := [str(key) for key, value in data.items() if _holds(_is_not_finite, value)]:
        raise BadRequest({key: ["Numbers must be finite (not NaN or infinite)."] for key in not_finite})
    return data


def _is_nul(value: Any) -> bool:
    """A text with a NUL character (PostgreSQL's text and JSON columns refuse it)."""
    return isinstance(value, str) and "\x00" in value


def _is_not_finite(value: Any) -> bool:
    """NaN or an infinity (JSON's ``NaN``, ``Infinity`` or ``1e400``): PostgreSQL's JSON columns refuse them."""
    return isinstance(value, float) and not math.isfinite(value)


def _holds(test: Callable[[Any], bool], value: Any) -> bool:
    """Whether ``test`` holds for ``value`` or anything in it, keys of objects included."""
    if isinstance(value, dict):
        return any(_holds(test, key) or _holds(test, item) for key, item in value.items())
    if isinstance(value, list):
        return any(_holds(test, item) for item in value)
    return test(value)


def whole_number(text: str, maximum: int) -> int | None:
    """``text`` as a whole number from 0 to ``maximum``, else None: ASCII
    digits only (``str.isdigit`` also takes "²", which ``int`` refuses), and
    no longer than ``maximum`` (``int`` refuses over 4,300 digits)."""
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(maximum)):
        return None
    number = int(text)
    return number if number <= maximum else None


def _bounded(value: Any) -> Any:
    """``value`` with every text in it cut to MESSAGE_MAX_CHARS."""
    if isinstance(value, str):
        return value if len(value) <= MESSAGE_MAX_CHARS else value[:MESSAGE_MAX_CHARS] + "…"
    if isinstance(value, dict):
        return {key: _bounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_bounded(item) for item in value]
    return value


def error(message: str, status: int, **extra: Any) -> JsonResponse:
    """The JSON error answer; ``extra`` adds e.g. ``errors`` (field messages).
    Each message is cut short where long."""
    return JsonResponse(_bounded({"error": message, **extra}), status=status)


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
                # RFC 9110: a 405 names the methods the address takes.
                refused = error(f"Method {request.method} is not allowed here.", 405, allowed=list(methods))
                refused["Allow"] = ", ".join(methods)
                return refused
            try:
                return view(request, *args, **kwargs)
            except BadRequest as exc:
                return error(bad_request_message(exc.errors), 400, errors=exc.errors)
            except ActionError as exc:
                return error(exc.message, exc.status)
            except UnknownTask as exc:
                return error(str(exc), 409)
            except Http404 as exc:
                return error(str(exc) or "Not found.", 404)

        return wrapper

    return decorate


# Django's own error pages (an address no route matches, a body its parser
# cannot read, a failed CSRF check) come before any API view runs: under
# /api/ they answer in the JSON error shape too, elsewhere as pages. Set as
# handler400/404/500 in urls.py, and as CSRF_FAILURE_VIEW.

def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return error("The request could not be read: its body does not match its Content-Type, or it has too "
                     "many fields.", 400)
    return defaults.bad_request(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return error(f"The API has no address {request.path!r} (see {API_PREFIX}).", 404)
    return defaults.page_not_found(request, exception)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a session request without the CSRF token."""
    if request.path.startswith(API_PREFIX):
        return error("CSRF check failed: send the X-CSRFToken header with the csrftoken cookie's value, or use an "
                     "API token ('Authorization: Token <key>').", 403)
    return csrf.csrf_failure(request, reason)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return error("The server failed to answer this request; it has been logged.", 500)
    return defaults.server_error(request)
