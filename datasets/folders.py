"""Server folders a dataset may be read from: only below DATASET_ROOTS."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings


class OutsideRoots(Exception):
    pass


def roots() -> list[Path]:
    """DATASET_ROOTS, and the folder of the sample datasets the app makes itself."""
    return [Path(r).resolve() for r in settings.DATASET_ROOTS] + [(settings.DATA_DIR / "samples").resolve()]


def allowed(path: str | Path) -> Path:
    """The resolved path when it is one of the roots or below one; else
    OutsideRoots (also for a name no folder can have: a NUL byte, a link loop)."""
    try:
        resolved = Path(path).expanduser().resolve()
    except (ValueError, OSError, RuntimeError):
        raise OutsideRoots(f"{str(path)!r} is not a name a folder on this server can have.") from None
    if any(resolved == root or resolved.is_relative_to(root) for root in roots()):
        return resolved
    raise OutsideRoots(f"{path} is not inside the folders this server may read: {', '.join(map(str, roots()))}.")


def listing(path: str | None) -> dict:
    """What the folder browser shows: the roots, or one folder's subfolders and file count."""
    if not path:
        return {"path": None, "parent": None, "folders": [{"name": str(r), "path": str(r)} for r in roots() if r.is_dir()],
                "files": 0}
    folder = allowed(path)
    if not folder.is_dir():
        raise OutsideRoots(f"{path} is not a folder.")
    entries = sorted(folder.iterdir(), key=lambda p: p.name)
    folders = [{"name": e.name, "path": str(e)} for e in entries if e.is_dir() and not e.name.startswith(".")]
    parent = str(folder.parent) if folder not in roots() else None
    return {"path": str(folder), "parent": parent, "folders": folders, "files": sum(1 for e in entries if e.is_file())}


def first_file(folder: Path, limit: int = 200) -> Path | None:
    """Some file below ``folder`` (for the resize preview), looking at no more than ``limit`` entries."""
    seen = 0
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            if not name.startswith("."):
                return Path(root) / name
        seen += len(names) + len(dirs)
        if seen >= limit:
            break
    return None
