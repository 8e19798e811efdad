"""The class folders of a build's source, on disk or inside a checked archive.

Both give, per split, each class's files in the same order (``os.walk``'s,
sorted: a folder's files, then its subfolders), so an archive builds exactly
the dataset its extracted folders would. Files and top-level folders whose
names start with a dot are left out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .archives import Listing

SPLITS = ("train", "val", "test")

ClassFiles = dict[str, list[str]]  # class name -> its files


class SourceError(Exception):
    """The source cannot be read as class folders; the message is shown to the user."""


def inside(path: Path, roots: list[Path]) -> bool:
    """Whether ``path``, links resolved, is in one of the folders this server may read."""
    resolved = path.resolve()
    return any(resolved == root or resolved.is_relative_to(root) for root in roots)


def class_files(folder: Path) -> ClassFiles:
    """Files under each top-level subfolder (nested folders count for their top-level class)."""
    if not folder.is_dir():
        raise SourceError(f"The folder {folder} does not exist or is not a folder.")
    found: ClassFiles = {}
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.is_dir() and not entry.is_symlink() and not entry.name.startswith("."):
            files = []
            for root, dirs, names in os.walk(entry):
                dirs.sort()
                files.extend(os.path.join(root, name) for name in sorted(names) if not name.startswith("."))
            found[entry.name] = files
    return found


def folder_classes(folders: dict[str, Path]) -> dict[str, ClassFiles]:
    return {split: class_files(folder) for split, folder in folders.items()}


@dataclass
class _Folder:
    """A folder of an archive: its subfolders, and its files (name -> the member's name)."""

    folders: dict[str, _Folder] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)

    def folder(self, parts: tuple[str, ...]) -> _Folder:
        node = self
        for part in parts:
            node = node.folders.setdefault(part, _Folder())
        return node

    def walk(self) -> list[str]:
        found = [self.files[name] for name in sorted(self.files) if not name.startswith(".")]
        for name in sorted(self.folders):
            found.extend(self.folders[name].walk())
        return found

    def classes(self) -> ClassFiles:
        return {name: self.folders[name].walk() for name in sorted(self.folders) if not name.startswith(".")}


def _tree(listing: Listing) -> _Folder:
    root = _Folder()
    for parts in listing.folders:
        root.folder(parts)
    for entry in listing.files:
        root.folder(entry.parts[:-1]).files[entry.parts[-1]] = entry.name
    return root


def archive_classes(listing: Listing) -> dict[str, ClassFiles]:
    """The class files of each split in an archive, named as the archive names them: class folders
    at the top (or under one wrapping folder), or ``train``/``val``/``test`` folders of them."""
    root = _tree(listing)
    while True:
        folders = [name for name in root.folders if not name.startswith(".")]
        files = [name for name in root.files if not name.startswith(".")]
        if len(folders) == 1 and folders[0] not in SPLITS and not files:
            root = root.folders[folders[0]]
            continue
        break
    names = set(folders)
    if "train" in names and names <= set(SPLITS):
        return {split: root.folders[split].classes() for split in SPLITS if split in names}
    return {"train": root.classes()}
