"""Request bodies are limited before Django reads a byte of them.

Django's ASGI handler spools a whole request body to disk before any view or
middleware runs, and the CSRF check parses a form body before the view can
ask who is signed in. So the limit sits in front of Django, at the ASGI
level: a body over ``REQUEST_MAX_BYTES`` gets 413 at once, whether its size is
declared (Content-Length) or only found out while it streams (chunked, or a
client that lies). A method that takes no body (GET, HEAD, OPTIONS, DELETE)
gets 400 as soon as its headers announce one (a length or chunks), and is cut
off at its first byte if one comes anyway. Only the URLs that apps declare as uploads with
``allow_large_bodies`` take up to ``UPLOAD_MAX_BYTES``, and only from a
signed-in user (session or API token); everyone else gets the small limit.
An upload that would take its user over their disk quota (``DISK_QUOTA_BYTES``)
gets 403 the same way: from its declared length, or once it passes the room
left (a body the size of the small limit is let through to the view, which
refuses it with the job).

Who the user is and how much room their quota leaves are the apps' to say:
the project builds the middleware with ``UploadRoom`` hooks
(``digitslike/asgi.py``), and this module imports no app.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import User
from django.template.defaultfilters import filesizeformat

from web.urlnames import url_name

_large_body_urls: set[str] = set()
# Methods whose requests carry no body: one announced is refused unread.
BODILESS_METHODS = ("GET", "HEAD", "OPTIONS", "DELETE")


def allow_large_bodies(*url_names: str) -> None:
    """Let signed-in users send bodies up to UPLOAD_MAX_BYTES to these URLs."""
    _large_body_urls.update(url_names)


class BodyTooLarge(Exception):
    pass


# The signed-in user a request's headers are of (None: nobody).
UserOf = Callable[[dict[str, str]], Awaitable[User | None]]


@dataclass(frozen=True)
class UploadRoom:
    """What the limit asks of the apps about an upload: the signed-in user
    the request is of (None: nobody), the bytes that user uses of their
    quota ((used, quota), None: no quota), and the message refusing an
    upload of ``size`` bytes (None: not declared) that does not fit."""

    user_of: UserOf
    disk_room: Callable[[User], tuple[int, int] | None]
    no_room_message: Callable[[User, int, int, int | None], str]


def _takes_uploads(path: str) -> bool:
    return url_name(path) in _large_body_urls


async def limit_for(scope: dict[str, Any], headers: dict[str, str], uploads: UploadRoom) -> tuple[int, tuple[int, str]]:
    """The most bytes the request's body may hold, and the refusal (status,
    message) of one that holds more."""
    if not _takes_uploads(scope["path"]) or (user := await uploads.user_of(headers)) is None:
        return settings.REQUEST_MAX_BYTES, too_large(settings.REQUEST_MAX_BYTES)
    room = await sync_to_async(uploads.disk_room)(user)
    if room is not None and room[1] - room[0] < settings.UPLOAD_MAX_BYTES:
        used, quota = room
        return (max(quota - used, settings.REQUEST_MAX_BYTES),
                (403, uploads.no_room_message(user, used, quota, _declared_length(headers))))
    return settings.UPLOAD_MAX_BYTES, too_large(settings.UPLOAD_MAX_BYTES)


def _declared_length(headers: dict[str, str]) -> int | None:
    try:
        return int(headers["content-length"])
    except (KeyError, ValueError):
        return None


def _announces_body(headers: dict[str, str]) -> bool:
    return "transfer-encoding" in headers or _declared_length(headers) not in (None, 0)


def too_large(limit: int) -> tuple[int, str]:
    return 413, f"The request body is larger than the limit of {filesizeformat(limit)} for this address."


async def refuse(scope: dict[str, Any], send: Any, refusal: tuple[int, str]) -> None:
    """Answer ``refusal`` (status, message) in the app's error shape and close
    the connection: the rest of the body is never read."""
    status, message = refusal
    if scope["path"].startswith("/api/"):
        body, content_type = json.dumps({"error": message}).encode(), b"application/json"
    else:
        body, content_type = message.encode(), b"text/plain; charset=utf-8"
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    """ASGI middleware around the Django application."""

    def __init__(self, app: Any, uploads: UploadRoom) -> None:
        self.app = app
        self.uploads = uploads

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        declared = _declared_length(headers)
        if scope["method"] in BODILESS_METHODS:
            refusal = 400, f"A {scope['method']} request takes no body."
            if _announces_body(headers):
                return await refuse(scope, send, refusal)
            limit = 0
        elif declared == 0:
            return await self.app(scope, receive, send)
        else:
            limit, refusal = await limit_for(scope, headers, self.uploads)
            if declared is not None and declared > limit:
                return await refuse(scope, send, refusal)
        received = 0
        responded = False

        async def counted_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        async def watched_send(message: dict[str, Any]) -> None:
            nonlocal responded
            responded = True
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except BodyTooLarge:
            if not responded:
                await refuse(scope, send, refusal)
