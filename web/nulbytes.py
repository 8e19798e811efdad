"""Refuses a request whose address or query holds a NUL character (``%00``)
before any view runs: no name, id, group or search here can hold one, and
PostgreSQL's text columns raise an error on it (SQLite takes it), so a view
that passed it on to a query would fail with a 500 on one database only.
JSON bodies are checked where they are read (``web.api.json_body``),
form fields by Django's own validator."""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from .api import API_PREFIX, error

MESSAGE = "The address or its query holds a NUL character, which no name or value here may have."


def refusal(request: HttpRequest) -> HttpResponse | None:
    query = request.GET
    if "\x00" not in request.path and not any("\x00" in key or any("\x00" in value for value in query.getlist(key))
                                              for key in query):
        return None
    return error(MESSAGE, 400) if request.path.startswith(API_PREFIX) else HttpResponseBadRequest(MESSAGE)


class RefuseNulMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        return refusal(request) or self.get_response(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        return refusal(request) or await self.get_response(request)
