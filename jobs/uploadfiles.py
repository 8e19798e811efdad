"""Keeping what a user uploaded to make a job in the job's folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from django.core.files.uploadedfile import UploadedFile

# The mode of the job folder's other files, whatever the umask.
MODE = 0o644


def keep(upload: UploadedFile, target: Path) -> None:
    """Move ``upload`` to ``target`` (or write it there, if it is still in
    memory) with the mode of the rest of the job's data: Django spools a
    large upload to a temporary file of mode 0600, which a move keeps."""
    if hasattr(upload, "temporary_file_path"):
        shutil.move(upload.temporary_file_path(), target)
    else:
        with open(target, "wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
    os.chmod(target, MODE)
