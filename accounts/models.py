from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import User
from django.db import models
from django.utils import timezone


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
    async def user_for(cls, key: str) -> User | None:
        token = await cls.objects.select_related("user").filter(digest=_digest(key), user__is_active=True).afirst()
        if token is None:
            return None
        await cls.objects.filter(pk=token.pk).aupdate(last_used_at=timezone.now())
        return token.user

