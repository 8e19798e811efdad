"""The permissions a job's kind asks of its owner for some params
(``JobKind.required_permission``), checked wherever a job may start to run:
on submit, clone and resume, and by the worker when it starts the job."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission, User

from . import kinds


def missing(owner: User, kind_name: str, params: dict[str, Any]) -> str:
    """Why ``owner`` may not run a job of this kind with these params, or ''."""
    kind = kinds.find(kind_name)
    needed = kind.required_permission(params) if kind and kind.required_permission else None
    if not needed or (owner.is_active and owner.has_perm(needed)):
        return ""
    app_label, _, codename = needed.partition(".")
    permission = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
    return (f"{owner.username} may not run this {kind.label.lower()}: it needs the permission "
            f"“{permission.name if permission else needed}”, which only an administrator grants.")
