"""The files of a detection source, the same whether it is a server folder or
an uploaded archive read in place, so every importer reads both alike.

Names are relative, "/"-separated and sorted; a name with a part starting
with a dot is left out. When the source is one wrapping folder (the usual
zip of a folder), names are taken inside it, as ``archive_classes`` does,
unless that folder is one the formats give a meaning to (``images``,
``Annotations``, ``train``...). In a folder, a link is followed only when it
stays inside the folder: a file link that leaves it is refused and reported
in ``problems``, and links to folders are not followed (a loop or a second
copy of the same images).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from ..archives import Entry, Limits, Listing, MemberReader, list_members
from ..buildplan import UNCOMPRESSED_ARCHIVE, BuildError
from ..dataset_sources import SourceError, inside
from .annotations import Problem

MAX_LABEL_BYTES = 64 * 1024**2  # what one label file may hold: a COCO JSON of ~100,000 images fits
# Folders a single wrapping folder may be but is not unwrapped from, since a format reads their names.
MEANINGFUL = {"images", "labels", "annotations", "jpegimages", "image_2", "label_2", "train", "val", "valid", "test"}


class TooLarge(SourceError):
    """A label file over the size limit; ``str(exc)`` says which limit."""


class SourceFiles(ABC):
    """The regular files of a source, by relative name."""

    def __init__(self, names: list[str]) -> None:
        self._top = _wrapping_folder(names)
        self._names = [name[len(self._top):] for name in names]
        self.problems: list[Problem] = []  # files refused while listing

    def names(self) -> list[str]:
        return list(self._names)

    def read(self, name: str, limit: int = MAX_LABEL_BYTES) -> bytes:
        """The file's bytes; TooLarge when it holds over ``limit`` bytes, KeyError for a name not listed."""
        size = self._size(self._top + name)
        if size > limit:
            raise TooLarge(f"the file is {_shown_size(size)}, over the {_shown_size(limit)} limit for a label file")
        return self._read(self._top + name)

    @abstractmethod
    def path_or_member(self, name: str) -> str | Entry:
        """What the build's image decoder reads: an absolute path, or the archive's Entry."""

    @abstractmethod
    def _size(self, full_name: str) -> int: ...

    @abstractmethod
    def _read(self, full_name: str) -> bytes: ...


def _shown_size(n: int) -> str:
    return f"{n / 1024**2:.1f} MiB" if n >= 1024**2 else f"{n:,} bytes"


def _wrapping_folder(names: list[str]) -> str:
    """The prefix ("folder/" or "") of a single folder that holds every file, unwrapped repeatedly."""
    top = ""
    while names:
        first = names[0].split("/", 1)
        if len(first) == 1 or first[0].lower() in MEANINGFUL:
            break
        prefix = first[0] + "/"
        if not all(name.startswith(prefix) for name in names):
            break
        top, names = top + prefix, [name[len(prefix):] for name in names]
    return top


class FolderFiles(SourceFiles):
    def __init__(self, root: Path) -> None:
        if not root.is_dir():
            raise SourceError(f"The folder {root} does not exist or is not a folder.")
        self.root = root.resolve()
        found, refused = [], []
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            base = Path(folder)
            for d in dirs:
                if (base / d).is_symlink():
                    refused.append(Problem(_relative(base / d, self.root), None, "a link to a folder; it is not followed"))
            dirs[:] = [d for d in dirs if not (base / d).is_symlink()]
            for name in files:
                path = base / name
                if name.startswith(".") or not path.is_file():
                    continue
                if path.is_symlink() and not inside(path, [self.root]):
                    refused.append(Problem(_relative(path, self.root), None, "a link to a file outside the folder; left out"))
                    continue
                found.append(_relative(path, self.root))
        super().__init__(sorted(found))
        self.problems = sorted((Problem(p.file.removeprefix(self._top), None, p.reason) for p in refused),
                               key=lambda p: p.file)
        self._known = set(found)

    def path_or_member(self, name: str) -> str:
        return str(self._path(self._top + name))

    def _path(self, full_name: str) -> Path:
        if full_name not in self._known:
            raise KeyError(full_name)
        return self.root / full_name

    def _size(self, full_name: str) -> int:
        return self._path(full_name).stat().st_size

    def _read(self, full_name: str) -> bytes:
        return self._path(full_name).read_bytes()


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


class ArchiveFiles(SourceFiles):
    """An archive's checked members (archives hold no links: ``list_members`` refuses them)."""

    def __init__(self, listing: Listing) -> None:
        self.listing = listing
        self._entries = {"/".join(entry.parts): entry for entry in listing.files
                         if not any(part.startswith(".") for part in entry.parts)}
        super().__init__(sorted(self._entries))

    def path_or_member(self, name: str) -> Entry:
        return self._entries[self._top + name]

    def _size(self, full_name: str) -> int:
        return self._entries[full_name].size

    def _read(self, full_name: str) -> bytes:
        return self.listing.reader.read(self._entries[full_name])


def open_source(config: dict[str, Any], partial: Path, task: str) -> tuple[SourceFiles, MemberReader | None]:
    """The files of a build's source (``config["source"]``: a server folder,
    or an uploaded archive checked against its limits, a compressed tar
    decompressed into ``partial``), and the reader of the archive's members
    for the build's pool. BuildError for another kind of source (``task``
    names the dataset's task in the message)."""
    source = config["source"]
    if source["type"] == "archive":
        print("checking the archive…", flush=True)
        listing = list_members(Path(source["path"]), partial / UNCOMPRESSED_ARCHIVE,
                               Limits(**config.get("archive_limits", {})))
        return ArchiveFiles(listing), listing.reader
    if source["type"] == "folder":
        return FolderFiles(Path(source["path"])), None
    raise BuildError(f"A {task} dataset is read from a folder or an archive, not from {source['type']}.")
