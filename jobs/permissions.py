"""The permissions a job's kind asks of its owner for some params
(``JobKind.required_permission``), checked wherever a job may start to run:
on submit, clone and resume, and by the worker when it starts the job.

A job that builds a trained model's network (``JobKind.network_of``: an
evaluation, an export, a pretrained model made from a snapshot) runs that
network's code as its own owner's job, and so does Classify one in the model
server. Code runs only for users who hold the permission it needs, or when
a user holding it vouched for that code: the owner of a job of code, who
held the permission when it was submitted (``vouched``), for as long as
they still hold it."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission, User

from . import kinds
from .models import Job

# The params' record of the user (an id) whose permission let the job's code be submitted.
VOUCHED_BY = "code_vouched_by"


def _needed(job_kind: str, params: dict[str, Any]) -> str | None:
    kind = kinds.find(job_kind)
    return kind.required_permission(params) if kind and kind.required_permission else None


def _holds(user: User, needed: str) -> bool:
    return user.is_active and user.has_perm(needed)


def _name(needed: str) -> str:
    app_label, _, codename = needed.partition(".")
    permission = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
    return permission.name if permission else needed


def missing(owner: User, kind_name: str, params: dict[str, Any]) -> str:
    """Why ``owner`` may not run a job of this kind with these params, or ''."""
    kind = kinds.find(kind_name)
    needed = _needed(kind_name, params)
    if needed and not _holds(owner, needed):
        return (f"{owner.username} may not run this {kind.label.lower()}: it needs the permission "
                f"“{_name(needed)}”, which only an administrator grants.")
    model_id = kind.network_of(params) if kind and kind.network_of else None
    model = Job.objects.filter(pk=model_id).first() if isinstance(model_id, int) else None
    return network_refusal(owner, model, f"run this {kind.label.lower()}") if model else ""


def network_refusal(user: User, model: Job, action: str) -> str:
    """Why ``user`` may not ``action`` (build ``model``'s network, whose
    code then runs as theirs), or '': a network of code needs its
    permission, unless a user holding it vouched for the code."""
    needed = _needed(model.kind, model.params)
    if not needed or _holds(user, needed):
        return ""
    voucher = model.params.get(VOUCHED_BY)
    if isinstance(voucher, int) and any(_holds(found, needed) for found in User.objects.filter(pk=voucher)):
        return ""
    return (f"{user.username} may not {action}: the network of “{model.name}” (#{model.pk}) is code that runs "
            f"with the server account's rights, and no user holding the permission “{_name(needed)}” vouches "
            f"for it (its owner did not hold it when it was submitted, or holds it no more); "
            f"only an administrator grants it.")


def vouched(owner: User, kind_name: str, params: dict[str, Any]) -> dict[str, Any]:
    """The params of a job ``owner`` submits: a job whose params need a
    permission (which ``missing`` found the owner holds) records its owner
    as vouching for its code; any other leaves the record out, whatever the
    params said (a clone's are another user's)."""
    params = {key: value for key, value in params.items() if key != VOUCHED_BY}
    if _needed(kind_name, params):
        params[VOUCHED_BY] = owner.pk
    return params
