"""Refusals (``services.ActionError``) raised under any page: a job that may
not be submitted (a quota, a permission) is refused with its message and
status code, whichever app's page submitted it; so is a page of a job
whose task this server does not know (``UnknownTask``, 409). The JSON API
answers them itself (``web.api``)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from trainer.tasks import UnknownTask

from .services import ActionError


class ActionErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, UnknownTask):
            return render(request, "jobs/refused.html", {"message": str(exception)}, status=409)
        if not isinstance(exception, ActionError):
            return None
        return render(request, "jobs/refused.html", {"message": exception.message}, status=exception.status)
