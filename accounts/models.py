from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.db import models
from django.utils import timezone

# How stale a token's "last used" may be: it is written at most once in this
# time, so that a client's loop of requests does not write the database on
# every one (a write is an fsync on SQLite).
LAST_USED_RESOLUTION = timedelta(minutes=1)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    """A key for the JSON API (``Authorization: Token <key>``). Only its
    digest is stored; the key is shown once, when it is made."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    @classmethod
    def issue(cls, user: User, name: str) -> tuple[ApiToken, str]:
        key = secrets.token_urlsafe(32)
        token = cls.objects.create(user=user, name=name, digest=_digest(key), prefix=key[:8])
        return token, key

    @classmethod
    def user_for(cls, key: str) -> User | None:
        """The active user the key is a token of, or None; the token's
        ``last_used_at`` brought up to date to within LAST_USED_RESOLUTION."""
        token = cls.objects.select_related("user").filter(digest=_digest(key), user__is_active=True).first()
        if token is None:
            return None
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
            cls.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user

    @classmethod
    async def auser_for(cls, key: str) -> User | None:
        """``user_for`` from async code: one trip to a thread for both queries."""
        return await sync_to_async(cls.user_for)(key)

