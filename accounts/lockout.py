"""The page django-axes shows instead of signing in, once a user name has
failed too often from one address (settings: LOGIN_FAILURE_LIMIT,
LOGIN_LOCKOUT_MINUTES)."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def locked_out(request: HttpRequest, original_response: HttpResponse | None, credentials: dict | None) -> HttpResponse:
    minutes = round(settings.AXES_COOLOFF_TIME * 60)
    return render(request, "registration/locked_out.html", {"minutes": minutes}, status=429)
