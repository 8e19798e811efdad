"""Server folders a dataset may be read from: only below DATASET_ROOTS.

Users never see where the roots are: each root goes by a label (its folder's
name) and a path below it by the label and the path relative to the root
(``imports/cats``). Fields take that form, or a server path below a root.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from trainer.imageio import is_image


class OutsideRoots(Exception):
    pass


def roots() -> list[Path]:
    """DATASET_ROOTS, and the folder of the sample datasets the app makes itself."""
    return [Path(r).resolve() for r in settings.DATASET_ROOTS] + [(settings.DATA_DIR / "samples").resolve()]


def labelled_roots() -> dict[str, Path]:
    """The roots by label: each one's folder name, numbered where two share one."""
    labelled: dict[str, Path] = {}
    for root in roots():
        label, number = root.name or "root", 2
        while label in labelled:
            label, number = f"{root.name or 'root'}-{number}", number + 1
        labelled[label] = root
    return labelled


def shown(path: str | Path) -> str:
    """``path`` as users name it (``imports/cats``) when it is a root or below
    one; any other text unchanged."""
    text = str(path)
    if not text.startswith("/"):  # the roots are absolute: spare the resolving of them
        return text
    for label, root in sorted(labelled_roots().items(), key=lambda item: -len(str(item[1]))):
        if text == str(root):
            return label
        if text.startswith(f"{root}/"):
            return f"{label}/{text[len(str(root)) + 1:]}"
    return text


def _outside(path: str | Path) -> OutsideRoots:
    return OutsideRoots(f"{path} is not inside the folders this server may read: "
                        f"{', '.join(labelled_roots())}.")


def _unnamable(path: str | Path) -> OutsideRoots:
    return OutsideRoots(f"{str(path)!r} is not a name a folder on this server can have.")


def allowed(path: str | Path) -> Path:
    """The resolved server path of ``path`` (a label and a path below its
    root, or a server path) when it is a root or below one; else OutsideRoots
    (also for a name no folder can have: a NUL byte, a link loop)."""
    text = str(path)
    if "\x00" in text:
        raise _unnamable(path)
    if not text.startswith(("/", "~")):
        label, _, inside = text.partition("/")
        root = labelled_roots().get(label)
        if root is None:
            raise _outside(path)
        text = str(root / inside)
    try:
        resolved = Path(text).expanduser().resolve()
    except (ValueError, OSError, RuntimeError):
        raise _unnamable(path) from None
    if any(resolved == root or resolved.is_relative_to(root) for root in roots()):
        return resolved
    raise _outside(path)


def listing(path: str | None) -> dict:
    """What the folder browser shows, in users' names: the roots, or one
    folder's subfolders and file count."""
    if not path:
        return {"path": None, "parent": None,
                "folders": [{"name": label, "path": label} for label, r in labelled_roots().items() if r.is_dir()],
                "files": 0}
    folder = allowed(path)
    if not folder.is_dir():
        raise OutsideRoots(f"{path} is not a folder.")
    entries = sorted(folder.iterdir(), key=lambda p: p.name)
    folders = [{"name": e.name, "path": shown(e)} for e in entries if e.is_dir() and not e.name.startswith(".")]
    parent = shown(folder.parent) if folder not in roots() else None
    return {"path": shown(folder), "parent": parent, "folders": folders,
            "files": sum(1 for e in entries if e.is_file())}


def first_image(folder: Path, directories: int = 50) -> Path | None:
    """The first image file below ``folder`` by name (for the resize
    preview), looking in no more than ``directories`` folders; other files
    (labels beside the images, a detection dataset's) are passed over."""
    for walked, (root, dirs, names) in enumerate(os.walk(folder)):
        if walked >= directories:
            break
        dirs.sort()
        for name in sorted(names):
            if not name.startswith(".") and is_image(name):
                return Path(root) / name
    return None
