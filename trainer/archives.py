"""Extracting uploaded zip and tar archives without trusting them.

Every member is checked before anything is written: only regular files and
folders, no absolute paths, no ``..``, nothing that lands outside the
destination, no duplicates, and limits on the member count, the total size
and the compression ratio (zip bombs). Sizes are checked again while
streaming, since headers can lie. A refused archive leaves nothing behind.
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

CHUNK = 1 << 20
RATIO_CHECK_ABOVE = 1 << 20  # members this small may compress as well as they like


class ArchiveError(Exception):
    """A refused archive; ``str(exc)`` names the member and the reason."""


@dataclass(frozen=True)
class Limits:
    max_total_bytes: int = 20 * 1024**3
    max_members: int = 2_000_000
    max_ratio: float = 200.0


@dataclass
class Member:
    name: str
    parts: tuple[str, ...]
    is_dir: bool
    size: int
    compressed: int | None
    handle: object


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{int(n)} bytes"


def archive_kind(path: Path) -> str:
    """"zip" or "tar" by the file's content, never its name."""
    if zipfile.is_zipfile(path):
        return "zip"
    if tarfile.is_tarfile(path):
        return "tar"
    raise ArchiveError(f"Refused archive: {Path(path).name} is not a zip or tar archive.")


def _safe_parts(name: str) -> tuple[str, ...]:
    """The path components of a member name, or ArchiveError if it could escape."""
    text = name.replace("\\", "/")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":") or text.startswith("//"):
        raise ArchiveError(f"Refused archive: member '{name}' has an absolute path.")
    parts = tuple(p for p in PurePosixPath(text).parts if p not in ("", "."))
    if ".." in parts:
        raise ArchiveError(f"Refused archive: member '{name}' would be written outside the destination.")
    return parts


def _zip_members(archive: zipfile.ZipFile) -> Iterator[Member]:
    for info in archive.infolist():
        kind = stat.S_IFMT(info.external_attr >> 16)
        is_dir = info.is_dir()
        if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
            what = "a symbolic link" if kind == stat.S_IFLNK else "a special file"
            raise ArchiveError(f"Refused archive: member '{info.filename}' is {what}; only files and folders are accepted.")
        yield Member(info.filename, _safe_parts(info.filename), is_dir, info.file_size, info.compress_size, info)


def _tar_members(archive: tarfile.TarFile) -> Iterator[Member]:
    for info in archive:
        if not (info.isfile() or info.isdir()):
            what = ("a symbolic link" if info.issym() else "a hard link" if info.islnk() else
                    "a FIFO" if info.isfifo() else "a device file" if info.isdev() else "a special file")
            raise ArchiveError(f"Refused archive: member '{info.name}' is {what}; only files and folders are accepted.")
        yield Member(info.name, _safe_parts(info.name), info.isdir(), info.size, None, info)


@contextmanager
def _opened(path: Path, kind: str):
    try:
        archive = zipfile.ZipFile(path) if kind == "zip" else tarfile.open(path)
    except (zipfile.BadZipFile, tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"Refused archive: it cannot be read ({exc}).") from None
    with archive:
        yield archive


def _check(members: list[Member], archive_bytes: int, limits: Limits) -> None:
    if len(members) > limits.max_members:
        raise ArchiveError(f"Refused archive: it has more than {limits.max_members} members.")
    seen: set[tuple[str, ...]] = set()
    total = 0
    for m in members:
        if not m.is_dir:
            if not m.parts:
                raise ArchiveError(f"Refused archive: member '{m.name}' has no file name.")
            if m.parts in seen:
                raise ArchiveError(f"Refused archive: member '{m.name}' appears twice.")
            seen.add(m.parts)
            total += m.size
            if m.compressed is not None and m.size > RATIO_CHECK_ABOVE and m.size > limits.max_ratio * max(m.compressed, 1):
                raise ArchiveError(f"Refused archive: member '{m.name}' is compressed {m.size / max(m.compressed, 1):.0f}:1, "
                                   f"over the {limits.max_ratio:.0f}:1 limit (a possible zip bomb).")
    if total > limits.max_total_bytes:
        raise ArchiveError(f"Refused archive: it would expand to {_gb(total)}, over the {_gb(limits.max_total_bytes)} limit.")
    if total > RATIO_CHECK_ABOVE and total > limits.max_ratio * max(archive_bytes, 1):
        raise ArchiveError(f"Refused archive: it expands {total / max(archive_bytes, 1):.0f}:1, "
                           f"over the {limits.max_ratio:.0f}:1 limit (a possible archive bomb).")


def _target(destination: Path, parts: tuple[str, ...]) -> Path:
    path = Path(os.fsdecode(os.path.join(os.fsencode(destination), *(os.fsencode(p) for p in parts))))
    if not path.resolve().is_relative_to(destination.resolve()):
        raise ArchiveError(f"Refused archive: member '{'/'.join(parts)}' would be written outside the destination.")
    return path


def _copy(source: IO[bytes], target: Path, declared: int, name: str, budget: list[int]) -> None:
    written = 0
    with open(target, "xb") as out:
        while block := source.read(CHUNK):
            written += len(block)
            budget[0] -= len(block)
            if written > declared or budget[0] < 0:
                raise ArchiveError(f"Refused archive: member '{name}' holds more data than its header says.")
            out.write(block)
    os.chmod(target, 0o644)


def extract(archive: Path, destination: Path, limits: Limits = Limits()) -> int:
    """Extract ``archive`` into ``destination`` (created; must not exist).
    Returns the number of files written; on refusal removes everything."""
    kind = archive_kind(archive)
    destination.mkdir(parents=True)
    try:
        with _opened(archive, kind) as opened:
            members = list(_zip_members(opened) if kind == "zip" else _tar_members(opened))
            _check(members, archive.stat().st_size, limits)
            budget = [limits.max_total_bytes]
            files = 0
            for m in members:
                target = _target(destination, m.parts)
                if m.is_dir:
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                source = opened.open(m.handle) if kind == "zip" else opened.extractfile(m.handle)
                with source:
                    _copy(source, target, m.size, m.name, budget)
                files += 1
            for folder in [destination, *(p for p in destination.rglob("*") if p.is_dir())]:
                os.chmod(folder, 0o755)
            return files
    except ArchiveError:
        shutil.rmtree(destination, ignore_errors=True)
        raise
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as exc:
        shutil.rmtree(destination, ignore_errors=True)
        raise ArchiveError(f"Refused archive: it cannot be read ({exc}).") from None
