"""An upload's other form fields are checked before its file is read.

Django's ASGI handler receives a whole request body before any view runs, so
a form that uploads a large archive would learn of a bad width only after the
archive arrived. For the URLs an app declares with ``check_fields_first``,
this ASGI middleware reads a multipart body only as far as the start of its
first file part, hands the fields sent before it to the app's check, and, when
the check answers with a refusal, sends that at once and reads no further.
Otherwise the bytes read so far go on to Django with the rest of the body.

The check sees only the fields that came before the file (a client that wants
the early answer sends them first, as the New dataset page does); it refuses
only on those fields' own errors, and the view checks the whole form again.
Only signed-in users get the early answer: the checks may say whether a server
folder exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpResponse, QueryDict
from django.utils.http import parse_header_parameters

from web.bodylimit import UserOf
from web.urlnames import url_name

# A form's fields are a few kilobytes; a body that has not reached its file by
# then goes to Django unchecked.
MAX_FIELDS_BYTES = 256 * 1024

FieldsCheck = Callable[[QueryDict, bool], HttpResponse | None]
_checks: dict[str, FieldsCheck] = {}


def check_fields_first(check: FieldsCheck, *url_names: str) -> None:
    """Run ``check(fields, wants_json)`` on the fields sent before the file to
    these URLs; a response it returns is the answer, sent before the file is read."""
    for name in url_names:
        _checks[name] = check


def fields_before_file(body: bytes, boundary: bytes) -> tuple[QueryDict, bool] | None:
    """The fields at the start of a multipart ``body`` and whether a file part
    begins after them (False: the body ended without one); None while the body
    read so far ends before either is known."""
    delimiter = b"--" + boundary
    fields = QueryDict(mutable=True)
    if not body.startswith(delimiter + b"\r\n"):
        return None
    start = len(delimiter) + 2
    while True:
        header_end = body.find(b"\r\n\r\n", start)
        if header_end < 0:
            return None
        name, is_file = _disposition(body[start:header_end])
        if is_file:
            return fields, True
        value_end = body.find(b"\r\n" + delimiter, header_end + 4)
        if value_end < 0:
            return None
        if name is not None:
            fields.appendlist(name, body[header_end + 4:value_end].decode("utf-8", errors="replace"))
        after = value_end + 2 + len(delimiter)
        if body[after:after + 2] == b"--":
            return fields, False
        start = after + 2


def _disposition(headers: bytes) -> tuple[str | None, bool]:
    """A part's field name and whether it is a file, from its headers."""
    for line in headers.decode("utf-8", errors="replace").split("\r\n"):
        key, _, value = line.partition(":")
        if key.strip().lower() == "content-disposition":
            _, params = parse_header_parameters(value)
            return params.get("name"), "filename" in params
    return None, False


def _check_for(scope: dict[str, Any]) -> FieldsCheck | None:
    if scope["type"] != "http" or scope["method"] != "POST":
        return None
    return _checks.get(url_name(scope["path"]))


def _boundary(headers: dict[str, str]) -> bytes | None:
    content_type, params = parse_header_parameters(headers.get("content-type", ""))
    boundary = params.get("boundary")
    return boundary.encode("latin-1") if content_type == "multipart/form-data" and boundary else None


async def _send_response(send: Any, response: HttpResponse) -> None:
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.items()]
    headers += [(b"content-length", str(len(response.content)).encode()),
                (b"connection", b"close")]  # the rest of the body is not read
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": response.content})


class FieldsFirstMiddleware:
    """ASGI middleware around the Django application; ``user_of`` finds the
    signed-in user a request's headers are of (None: nobody)."""

    def __init__(self, app: Any, user_of: UserOf) -> None:
        self.app = app
        self.user_of = user_of

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        check = _check_for(scope)
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", [])}
        boundary = _boundary(headers) if check else None
        if check is None or boundary is None or await self.user_of(headers) is None:
            return await self.app(scope, receive, send)
        read: list[dict[str, Any]] = []
        body = b""
        found = None
        while found is None and len(body) <= MAX_FIELDS_BYTES:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            found = fields_before_file(body, boundary)
            if not message.get("more_body", False):
                break
        if found is not None:
            wants_json = scope["path"].startswith("/api/") or headers.get("accept") == "application/json"
            refusal = await sync_to_async(check)(found[0], wants_json)
            if refusal is not None:
                return await _send_response(send, refusal)

        async def replayed() -> dict[str, Any]:
            return read.pop(0) if read else await receive()

        await self.app(scope, replayed, send)
