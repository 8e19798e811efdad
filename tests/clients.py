"""Django test clients for the suite's users."""

from django.contrib.auth.models import User
from django.test import Client


def signed_in(user: User) -> Client:
    """A client signed in as ``user`` (no password round trip)."""
    client = Client()
    client.force_login(user)
    return client
