from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from functools import cache

from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.db import connection, models
from django.utils import timezone

# How stale a token's "last used" may be: it is written at most once in this
# time, so that a client's loop of requests does not write the database on
# every one (a write is an fsync on SQLite).
LAST_USED_RESOLUTION = timedelta(minutes=1)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@cache
def _user_of_token() -> str:
    """The active user of the token whose digest is the second parameter, with
    ``token_id`` and ``token_stale`` (its last use at or before the first)."""
    token, user = ApiToken._meta, User._meta
    used = token.get_field("last_used_at").column
    return (f"SELECT u.*, t.{token.pk.column} AS token_id, (t.{used} IS NULL OR t.{used} <= %s) AS token_stale "
            f"FROM {user.db_table} u JOIN {token.db_table} t ON t.{token.get_field('user').column} = u.{user.pk.column} "
            f"WHERE t.{token.get_field('digest').column} = %s AND u.{user.get_field('is_active').column}")


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
        ``last_used_at`` brought up to date to within LAST_USED_RESOLUTION.

        One statement written out (``_USER_OF_TOKEN``), not the ORM's: every
        API request with a token asks it, and building the same join with
        ``select_related`` cost four times as long as running it (in one
        process, alternated: 0.35 ms against 0.08 ms at best; see
        docs/benchmarks.md, "Using a model")."""
        now = timezone.now()
        stale_before = connection.ops.adapt_datetimefield_value(now - LAST_USED_RESOLUTION)
        user = next(iter(User.objects.raw(_user_of_token(), [stale_before, _digest(key)])), None)
        if user is not None and user.token_stale:
            cls.objects.filter(pk=user.token_id).update(last_used_at=now)
        return user

    @classmethod
    async def auser_for(cls, key: str) -> User | None:
        """``user_for`` from async code: one trip to a thread for both queries."""
        return await sync_to_async(cls.user_for)(key)

