"""What "classify many" reads: a text list of images (``path [label]`` a
line) or a folder whose class subfolders give the labels, turned into
entries and checked against the folders the server may read.

Torch-free and Django-free: the web checks a list with it before it queues
an evaluation, and the evaluation job reads its source with it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_ENTRIES = 1_000_000
SHOWN = 5  # names listed in a message at most


class ListError(Exception):
    """A list or folder that cannot be used as a whole; the message is for the user."""


@dataclass(frozen=True)
class Entry:
    path: str  # the file on the server
    name: str  # what the report shows: the line's path, or the path inside the folder
    label: int | None  # the class index, None when unlabelled


def inside(path: Path, roots: list[Path]) -> bool:
    resolved = Path(path).resolve()
    return any(resolved == root or resolved.is_relative_to(root) for root in roots)


def class_index(label: str, classes: list[str]) -> int | None:
    """A label written as a class name or a class index; None when it is neither."""
    if label in classes:
        return classes.index(label)
    if label.isdigit() and int(label) < len(classes):
        return int(label)
    return None


def _split_line(line: str, classes: list[str]) -> tuple[str, int | None]:
    """``path label`` or ``path``: the last word is a label only when it names a class."""
    name, _, last = line.rpartition(" ")
    label = class_index(last, classes) if name.strip() else None
    return (name.strip(), label) if label is not None else (line, None)


def parse_list(text: str, prefix: Path | None, classes: list[str], roots: list[Path]) -> list[Entry]:
    """The entries of a text list; relative paths are taken below ``prefix``.
    A path outside ``roots`` refuses the whole list, naming its lines."""
    entries, outside = [], []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, label = _split_line(line, classes)
        path = prefix / name if prefix and not os.path.isabs(name) else Path(name)
        if not os.path.isabs(path):
            outside.append(f"line {number} (a relative path needs an image folder)")
        elif not inside(path, roots):
            outside.append(f"line {number}")
        entries.append(Entry(str(path), name, label))
        if len(entries) > MAX_ENTRIES:
            raise ListError(f"The list names more than {MAX_ENTRIES:,} images.")
    if outside:
        more = f" and {len(outside) - SHOWN} more" if len(outside) > SHOWN else ""
        raise ListError("These lines name files outside the folders this server may read: "
                        + ", ".join(outside[:SHOWN]) + more + ".")
    if not entries:
        raise ListError("The list names no image.")
    return entries


def _files(folder: Path) -> list[Path]:
    found = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(Path(root) / name for name in sorted(names) if not name.startswith("."))
        if len(found) > MAX_ENTRIES:
            raise ListError(f"The folder holds more than {MAX_ENTRIES:,} files.")
    return found


def folder_entries(folder: Path, classes: list[str], roots: list[Path]) -> tuple[list[Entry], list[str]]:
    """Every file below ``folder``, labelled by its top-level subfolder when
    that names a class, and what the user should know (folders that name no
    class, links that lead outside ``roots``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ListError("The folder does not exist or is not a folder.")
    entries, unknown, outside = [], set(), 0
    for path in _files(folder):
        if not inside(path, roots):
            outside += 1
            continue
        parts = path.relative_to(folder).parts
        label = classes.index(parts[0]) if len(parts) > 1 and parts[0] in classes else None
        if len(parts) > 1 and label is None:
            unknown.add(parts[0])
        entries.append(Entry(str(path), "/".join(parts), label))
    if not entries:
        raise ListError("The folder holds no files.")
    warnings = []
    if unknown:
        names = sorted(unknown)
        warnings.append("These folders name no class of the model, so their images have no label: "
                        + ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
                        + ".")
    if outside:
        warnings.append(f"{outside} link(s) lead outside the folders this server may read and were left out.")
    return entries, warnings
