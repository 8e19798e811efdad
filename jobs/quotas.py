"""Per-user quotas, checked when a job is submitted or resumed: how many
jobs a user may have queued or running (``JOB_QUOTA_ACTIVE``) and how many
bytes their job folders may hold (``DISK_QUOTA_BYTES``); 0 means no limit.
The disk quota also bounds an upload before it is read (``disk_room``, used
by ``web/bodylimit.py``): the upload ends up in a job folder.

A finished job's folder no longer grows, so its size is measured once (per
``finished_at``) and kept; an active job's is measured each time.
"""

from __future__ import annotations

import os
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.template.defaultfilters import filesizeformat

from .models import ACTIVE, Job, folder_of


def refusal(owner: User) -> tuple[str, int] | None:
    """Why ``owner`` may not queue one more job, with the HTTP status to say
    it with; None if they may."""
    limit = settings.JOB_QUOTA_ACTIVE
    if limit and (active := Job.objects.filter(owner=owner, status__in=ACTIVE).count()) >= limit:
        return (f"{owner.username} has {active} jobs queued or running, the most a user may have; "
                "wait for some to finish, or abort some.", 429)
    limit = settings.DISK_QUOTA_BYTES
    if limit and (used := disk_used(owner)) >= limit:
        return (f"{owner.username}'s jobs hold {filesizeformat(used)} on disk, their quota is "
                f"{filesizeformat(limit)}; delete some to queue more.", 403)
    return None


def disk_room(owner: User) -> tuple[int, int] | None:
    """The bytes ``owner``'s job folders hold and their quota; None without one."""
    limit = settings.DISK_QUOTA_BYTES
    return (disk_used(owner), limit) if limit else None


def no_room_message(owner: User, used: int, limit: int, size: int | None) -> str:
    """Why an upload of ``size`` bytes (None: sent without a length) is refused by the disk quota."""
    upload = f"this upload of {filesizeformat(size)}" if size else "this upload"
    return (f"{owner.username}'s jobs hold {filesizeformat(used)} on disk, their quota is {filesizeformat(limit)}: "
            f"{upload} does not fit; delete some jobs to make room.")


def disk_used(owner: User) -> int:
    total = 0
    for pk, status, finished_at in Job.objects.filter(owner=owner).values_list("pk", "status", "finished_at"):
        folder = folder_of(pk)
        total += folder_size(folder) if status in ACTIVE or finished_at is None else _finished_size(folder, finished_at)
    return total


@lru_cache(maxsize=100_000)
def _finished_size(folder: Path, finished_at: datetime) -> int:
    return folder_size(folder)


def folder_size(folder: Path) -> int:
    """Bytes of the files under ``folder`` (0 for none)."""
    total = 0
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                total += folder_size(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
        except FileNotFoundError:
            continue
    return total

