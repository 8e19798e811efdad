"""Extracting uploaded zip and tar archives without trusting them, or reading
their members in place.

Every member is checked before anything is written: only regular files and
folders, no absolute paths, no ``..``, no duplicates, no name that is both a
file and a folder, and limits on the member count, the total size and the
compression ratio (archive bombs). Sizes are checked again while streaming,
since headers can lie. Files are written 0o644 and folders 0o755 whatever the
archive says, owners are never set and links are never followed or created.
A refused archive leaves nothing behind.

``list_members`` runs the same checks without extracting: the dataset build
reads each member's bytes where it lies (a zip member through the zip, a tar
member at its offset in the tar; a compressed tar is first decompressed into
one uncompressed copy, as the listing reads it), from any process.

Standard library only: the dataset builder runs this outside Django.

Over 400 lines on purpose: extracting and reading in place must refuse
exactly the same archives, so both share one checker of members, limits and
streamed sizes here rather than two copies drifting apart.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import shutil
import stat
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

CHUNK = 1 << 20
RATIO_FLOOR = 1 << 20  # sizes up to this may compress as well as they like
SHOWN_NAME_CHARS = 200

# What the zip and tar libraries raise on damaged or unsupported data.
READ_ERRORS = (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError,
               UnicodeDecodeError, NotImplementedError)
ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
ZIP_ENCRYPTED = 0x1
ZIP_SPECIAL = {stat.S_IFLNK: "a symbolic link", stat.S_IFCHR: "a device file", stat.S_IFBLK: "a device file",
               stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}
TAR_SPECIAL = {tarfile.SYMTYPE: "a symbolic link", tarfile.LNKTYPE: "a hard link", tarfile.CHRTYPE: "a device file",
               tarfile.BLKTYPE: "a device file", tarfile.FIFOTYPE: "a FIFO"}

# How a compressed tar starts, and what reads it.
TAR_COMPRESSIONS = ((b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))
# How a zip starts: its first member, or the end of its directory when it has none.
ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")

Parts = tuple[str, ...]


class ArchiveError(Exception):
    """A refused archive; ``str(exc)`` is a clear message for the user that names the member and the reason."""


@dataclass(frozen=True)
class Limits:
    max_total_bytes: int = 20 * 1024**3  # sum of uncompressed member sizes
    max_members: int = 2_000_000
    max_ratio: float = 200.0  # uncompressed / compressed, whole archive and per member (members > 1 MiB only)


@dataclass
class Member:
    """One archive member as the checks see it; ``handle`` is the library's ZipInfo or TarInfo."""

    name: str
    is_dir: bool
    size: int
    compressed: int | None  # zip only: tar.gz and friends compress the archive as a whole
    handle: zipfile.ZipInfo | tarfile.TarInfo


def _refuse(reason: str) -> ArchiveError:
    return ArchiveError(f"Refused archive: {reason}")


def _shown(name: str) -> str:
    """The member name fit for a message: unprintable characters (and the surrogates that stand for
    bytes that are not UTF-8) become U+FFFD, and very long names are cut."""
    text = "".join(c if c.isprintable() else "\ufffd" for c in name)
    return text if len(text) <= SHOWN_NAME_CHARS else text[:SHOWN_NAME_CHARS] + "…"


def _size(n: float) -> str:
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"


def _is_tar(path: Path) -> bool:
    """``tarfile.is_tarfile``, which raises instead of answering on some damaged compressed files."""
    try:
        return tarfile.is_tarfile(path)
    except (EOFError, zlib.error, lzma.LZMAError):
        return False


def _is_tar_header(block: bytes) -> bool:
    try:
        tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
    except tarfile.HeaderError:
        return False
    return True


def refuse_unless_archive_start(head: bytes, name: str) -> None:
    """Refuse a file whose first bytes (``head``, its first 512 or all of a
    shorter one) are not those of a zip, a compressed tar or a tar header with
    a valid checksum: the libraries would read a large file of anything else
    to its end (a gigabyte of zeros for minutes) before saying so. A zip with
    data before it (a self-extracting one) is refused too."""
    if head.startswith(ZIP_STARTS + tuple(start for start, _ in TAR_COMPRESSIONS)) or _is_tar_header(head):
        return
    raise _refuse(f"'{_shown(name)}' is not a zip or tar archive.")


def archive_kind(path: Path) -> str:
    """"zip" or "tar" (plain, gz, bz2 or xz), decided by the file's content, never by its name.

    The first bytes are checked first (``refuse_unless_archive_start``). Then tar is asked first:
    a zip never passes the tar header checksum, but a tar whose last member is a zip file passes
    ``zipfile.is_zipfile``, which looks for a zip directory near the end of the file."""
    with open(path, "rb") as handle:
        refuse_unless_archive_start(handle.read(tarfile.BLOCKSIZE), Path(path).name)
    if _is_tar(path):
        return "tar"
    if zipfile.is_zipfile(path):
        return "zip"
    raise _refuse(f"'{_shown(Path(path).name)}' is not a zip or tar archive.")


def _parts(name: str) -> Parts:
    """The path components of a member name, backslashes counting as separators.

    Refusing absolute names and every ``..`` is enough to keep each member inside the destination,
    which is new and holds no links."""
    text = name.replace("\\", "/")
    if text.startswith("/") or (len(text) >= 2 and text[0].isascii() and text[0].isalpha() and text[1] == ":"):
        raise _refuse(f"member '{_shown(name)}' has an absolute path and would be written outside the destination.")
    parts = tuple(p for p in text.split("/") if p not in ("", "."))
    if ".." in parts:
        raise _refuse(f"member '{_shown(name)}' would be written outside the destination.")
    return parts


def _special(name: str, what: str) -> ArchiveError:
    return _refuse(f"member '{_shown(name)}' is {what}; only files and folders are accepted.")


def _zip_members(archive: zipfile.ZipFile) -> Iterator[Member]:
    for info in archive.infolist():
        kind = stat.S_IFMT(info.external_attr >> 16)
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            raise _special(info.filename, ZIP_SPECIAL.get(kind, "a special file"))
        if info.flag_bits & ZIP_ENCRYPTED:
            raise _refuse(f"member '{_shown(info.filename)}' is encrypted.")
        if info.compress_type not in ZIP_METHODS:
            raise _refuse(f"member '{_shown(info.filename)}' uses an unsupported compression method.")
        is_dir = info.is_dir() or info.filename.endswith("\\") or kind == stat.S_IFDIR
        yield Member(info.filename, is_dir, info.file_size, info.compress_size, info)


def _tar_members(archive: tarfile.TarFile) -> Iterator[Member]:
    for info in archive:
        if not (info.isfile() or info.isdir()):
            raise _special(info.name, TAR_SPECIAL.get(info.type, "a special file"))
        yield Member(info.name, info.isdir(), info.size, None, info)


@dataclass
class _Plan:
    """The checked members: folders to make, files to write. Checks run member by member, so an
    archive bomb is refused as soon as its listing shows it, before the rest is even read."""

    limits: Limits
    archive_bytes: int
    folders: set[Parts] = field(default_factory=set)
    files: dict[Parts, Member] = field(default_factory=dict)
    members: int = 0
    total: int = 0

    def add(self, member: Member) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise _refuse(f"it has more than {self.limits.max_members} members.")
        parts = _parts(member.name)
        if member.is_dir:
            self._add_folder(parts, member.name)
        else:
            self._add_file(parts, member)

    def _add_folder(self, parts: Parts, name: str) -> None:
        """Adds a folder and its parents; once one is known, so are all of its parents."""
        for end in range(len(parts), 0, -1):
            folder = parts[:end]
            if folder in self.folders:
                return
            if folder in self.files:
                raise _refuse(f"'{_shown('/'.join(folder))}' is both a file and a folder (member '{_shown(name)}').")
            self.folders.add(folder)

    def _add_file(self, parts: Parts, member: Member) -> None:
        name = _shown(member.name)
        if not parts:
            raise _refuse(f"member '{name}' has no file name.")
        if parts in self.files:
            raise _refuse(f"member '{name}' appears twice.")
        if parts in self.folders:
            raise _refuse(f"'{name}' is both a file and a folder.")
        self._add_folder(parts[:-1], member.name)
        self._check_member_ratio(member)
        self.files[parts] = member
        self.total += member.size
        self._check_totals()

    def _check_member_ratio(self, member: Member) -> None:
        if member.compressed is None or member.size <= RATIO_FLOOR:
            return
        ratio = member.size / max(member.compressed, 1)
        if ratio > self.limits.max_ratio:
            raise _refuse(f"member '{_shown(member.name)}' is compressed {ratio:.0f}:1, "
                          f"over the {self.limits.max_ratio:g}:1 limit (a possible zip bomb).")

    def _check_totals(self) -> None:
        """The running totals; "at least" because members not yet listed may add to them."""
        limits, total = self.limits, self.total
        if total > limits.max_total_bytes:
            raise _refuse(f"it would expand to at least {_size(total)}, over the {_size(limits.max_total_bytes)} limit.")
        if total > RATIO_FLOOR and total > limits.max_ratio * max(self.archive_bytes, 1):
            raise _refuse(f"it would expand to at least {_size(total)} from {_size(self.archive_bytes)}, "
                          f"over the {limits.max_ratio:g}:1 limit (a possible archive bomb).")


class _BoundedWriter:
    """A file that takes no more bytes than the member declared, so a lying header stops the copy
    instead of filling the disk. As the declared sizes were checked against the total limit, this
    also holds the total to it."""

    def __init__(self, out: BinaryIO, name: str, size: int) -> None:
        self.out, self.name, self.size = out, name, size
        self.written = 0

    def write(self, block: bytes) -> int:
        self.written += len(block)
        if self.written > self.size:
            raise _refuse(f"member '{_shown(self.name)}' holds more data than its header declares "
                          f"({_size(self.size)}).")
        return self.out.write(block)


def _path(destination: bytes, parts: Parts) -> bytes:
    """The path as bytes: tar names that are not UTF-8 hold surrogate escapes, which os.fsencode turns
    back into the original bytes."""
    return os.path.join(destination, *(os.fsencode(p) for p in parts))


def _make_folders(destination: bytes, folders: set[Parts]) -> None:
    os.chmod(destination, 0o755)
    for parts in sorted(folders):  # parents sort before their children
        path = _path(destination, parts)
        try:
            os.mkdir(path, 0o755)
            os.chmod(path, 0o755)  # whatever the umask
        except OSError as exc:
            raise _refuse(f"folder '{_shown('/'.join(parts))}' could not be created ({exc.strerror}).") from exc


def _open_member(archive: zipfile.ZipFile | tarfile.TarFile, member: Member) -> IO[bytes]:
    if isinstance(archive, zipfile.ZipFile):
        return archive.open(member.handle)
    source = archive.extractfile(member.handle)
    assert source is not None, "only regular tar members are planned as files"
    return source


def _write_file(archive: zipfile.ZipFile | tarfile.TarFile, member: Member, path: bytes) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        with _open_member(archive, member) as source, os.fdopen(os.open(path, flags, 0o644), "wb") as out:
            os.fchmod(out.fileno(), 0o644)  # whatever the umask
            shutil.copyfileobj(source, _BoundedWriter(out, member.name, member.size), CHUNK)
    except READ_ERRORS as exc:
        raise _refuse(f"member '{_shown(member.name)}' could not be extracted ({exc}).") from exc


def _open_archive(path: Path, kind: str) -> zipfile.ZipFile | tarfile.TarFile:
    if kind == "zip":
        return zipfile.ZipFile(path)
    return _open_tar(path)


def _open_tar(path: Path | None = None, stream: Any = None) -> tarfile.TarFile:
    """A tar file by path (random access) or a stream read once; names decode as os.fsdecode
    would, so os.fsencode gives back bytes that are not UTF-8."""
    return tarfile.open(path, "r|" if stream else "r", stream, encoding=sys.getfilesystemencoding(),
                        errors="surrogateescape")


def _extract(archive: Path, kind: str, destination: Path, limits: Limits) -> int:
    with _open_archive(archive, kind) as opened:
        members = _zip_members(opened) if isinstance(opened, zipfile.ZipFile) else _tar_members(opened)
        plan = _Plan(limits, archive.stat().st_size)
        for member in members:
            plan.add(member)
        root = os.fsencode(destination)
        _make_folders(root, plan.folders)
        for parts, member in plan.files.items():
            _write_file(opened, member, _path(root, parts))
        return len(plan.files)


def extract(archive: Path, destination: Path, limits: Limits = Limits()) -> int:
    """Extract ``archive`` into ``destination``, which must not exist yet (FileExistsError otherwise)
    and is created. Returns the number of regular files written.

    On any refusal raises ArchiveError and leaves nothing behind: the destination is removed, partial
    files included."""
    kind = archive_kind(archive)
    destination.mkdir(parents=True)
    try:
        return _extract(archive, kind, destination, limits)
    except READ_ERRORS as exc:
        shutil.rmtree(destination, ignore_errors=True)
        raise _refuse(f"it cannot be read ({exc}).") from exc
    except BaseException:
        shutil.rmtree(destination, ignore_errors=True)
        raise


# ---- Reading members in place -------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """A checked file member: ``name`` as the archive spells it, ``parts`` its path, and ``key``
    where its bytes are (zip: its position in the archive's listing; tar: the offset of its data
    in the uncompressed tar)."""

    name: str
    parts: Parts
    size: int
    key: int


class MemberReader:
    """Copies a member's bytes out of the archive. The file is opened lazily in the process that
    reads, and again in any process forked after it was opened: a forked process shares its
    parent's file position, and a zip's reads seek, so two processes reading through one
    inherited handle move it under each other (a detection build reads a zip's label files
    before its pool forks; its images then failed with "Bad CRC-32"). A member is refused if it
    holds more or fewer bytes than its header declares."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path, self.kind = path, kind
        self._opened: Any = None
        self._opened_by = 0  # the process that opened it

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_opened": None}

    def _handle(self) -> Any:
        """This process's own open archive."""
        if self._opened is None or self._opened_by != os.getpid():
            opened = zipfile.ZipFile(self.path) if self.kind == "zip" else os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            self._opened, self._opened_by = opened, os.getpid()
        return self._opened

    def copy(self, entry: Entry, out: BinaryIO) -> None:
        bounded = _BoundedWriter(out, entry.name, entry.size)
        try:
            if self.kind == "zip":
                self._copy_zip_member(entry, bounded)
            else:
                self._copy_tar_member(entry, bounded)
        except READ_ERRORS as exc:
            raise _refuse(f"member '{_shown(entry.name)}' could not be read ({exc}).") from exc
        if bounded.written < entry.size:
            raise _refuse(f"member '{_shown(entry.name)}' is cut short ({_size(bounded.written)} of "
                          f"{_size(entry.size)}).")

    def read(self, entry: Entry) -> bytes:
        out = io.BytesIO()
        self.copy(entry, out)
        return out.getvalue()

    def _copy_zip_member(self, entry: Entry, out: _BoundedWriter) -> None:
        opened = self._handle()
        with opened.open(opened.infolist()[entry.key]) as source:
            shutil.copyfileobj(source, out, CHUNK)

    def _copy_tar_member(self, entry: Entry, out: _BoundedWriter) -> None:
        descriptor = self._handle()
        offset, end = entry.key, entry.key + entry.size
        while offset < end and (block := os.pread(descriptor, min(CHUNK, end - offset), offset)):
            out.write(block)
            offset += len(block)


@dataclass
class Listing:
    """An archive's checked content: its folders, its files in archive order, and their reader."""

    folders: set[Parts]
    files: list[Entry]
    reader: MemberReader


class _Copying:
    """A stream that copies what is read from it into ``copy``."""

    def __init__(self, source: IO[bytes], copy: BinaryIO) -> None:
        self.source, self.copy = source, copy

    def read(self, size: int = -1) -> bytes:
        data = self.source.read(size)
        self.copy.write(data)
        return data


def _tar_opener(path: Path) -> Any:
    """What decompresses a tar (gzip, bzip2 or xz), or None for a plain tar."""
    with open(path, "rb") as handle:
        head = handle.read(8)
    return next((opener for magic, opener in TAR_COMPRESSIONS if head.startswith(magic)), None)


def _checked(plan: _Plan, members: Iterator[Member], key: Any) -> list[Entry]:
    entries = []
    for member in members:
        plan.add(member)
        if not member.is_dir:
            entries.append(Entry(member.name, _parts(member.name), member.size, key(member.handle)))
    return entries


def _list_zip(archive: Path, limits: Limits) -> Listing:
    plan = _Plan(limits, archive.stat().st_size)
    with zipfile.ZipFile(archive) as opened:
        position = {id(info): i for i, info in enumerate(opened.infolist())}
        entries = _checked(plan, _zip_members(opened), lambda info: position[id(info)])
    return Listing(plan.folders, entries, MemberReader(archive, "zip"))


def _list_tar(archive: Path, uncompressed: Path, limits: Limits) -> Listing:
    plan = _Plan(limits, archive.stat().st_size)
    opener = _tar_opener(archive)
    if opener is None:
        with _open_tar(archive) as opened:
            entries = _checked(plan, _tar_members(opened), lambda info: info.offset_data)
        return Listing(plan.folders, entries, MemberReader(archive, "tar"))
    # Streamed: each header is checked before the data after it is read, so the copy holds no
    # more than the limits allow.
    with opener(archive, "rb") as source, open(uncompressed, "xb") as copy, \
            _open_tar(stream=_Copying(source, copy)) as opened:
        entries = _checked(plan, _tar_members(opened), lambda info: info.offset_data)
    return Listing(plan.folders, entries, MemberReader(uncompressed, "tar"))


def list_members(archive: Path, uncompressed: Path, limits: Limits = Limits()) -> Listing:
    """Check ``archive`` as ``extract`` does, writing nothing but, for a compressed tar, its
    uncompressed copy at ``uncompressed`` (which must not exist yet). Raises ArchiveError on any
    refusal, and then leaves no copy behind."""
    try:
        if archive_kind(archive) == "zip":
            return _list_zip(archive, limits)
        return _list_tar(archive, uncompressed, limits)
    except READ_ERRORS as exc:
        uncompressed.unlink(missing_ok=True)
        raise _refuse(f"it cannot be read ({exc}).") from exc
    except BaseException:
        uncompressed.unlink(missing_ok=True)
        raise
