"""Uploaded archives are extracted only when every member is a plain file or
folder that stays inside the destination, within the count, size and ratio
limits; a refused archive leaves nothing behind. Every archive here is built
on the fly, most of them hostile."""

from __future__ import annotations

import io
import os
import re
import stat
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from trainer.archives import CHUNK, RATIO_FLOOR, ArchiveError, Limits, archive_kind, extract, list_members

CLASS_FOLDERS = [("cats/a.png", b"cat"), ("dogs/sub/b.png", b"dog")]
MIB = 1024 * 1024


def zip_with(path: Path, members: list[tuple[str | zipfile.ZipInfo, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return path


def tar_info(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode = kind, size, mode
    if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
        info.linkname = "/etc/passwd"
    return info


def tar_with(path: Path, members: list[tuple[str, bytes] | tarfile.TarInfo], mode: str = "w",
             tar_format: int = tarfile.PAX_FORMAT) -> Path:
    with tarfile.open(path, mode, format=tar_format) as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                archive.addfile(member)
            else:
                name, data = member
                archive.addfile(tar_info(name, size=len(data)), io.BytesIO(data))
    return path


def patched(path: Path, old: bytes, new: bytes) -> Path:
    """Rewrites bytes the zip and tar writers would never produce themselves."""
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new))
    return path


def refused(archive: Path, tmp_path: Path, message: str, limits: Limits | None = None) -> str:
    destination = tmp_path / "out"
    with pytest.raises(ArchiveError, match=re.escape(message)) as caught:
        extract(archive, destination, limits or Limits())
    assert not destination.exists()
    return str(caught.value)


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", ["../evil.txt", "a/../../evil.txt", "..\\evil.txt", "a\\..\\..\\evil.txt"])
def test_names_that_climb_out_are_refused(tmp_path, name):
    archive = zip_with(tmp_path / "a.zip", [("ok/a.txt", b"1"), (name, b"x")])
    refused(archive, tmp_path, f"Refused archive: member '{name}' would be written outside the destination.")
    assert not (tmp_path / "evil.txt").exists()


def test_a_climbing_name_in_a_tar_is_refused(tmp_path):
    refused(tar_with(tmp_path / "a.tar", [("ok/a.txt", b"1"), ("../evil.txt", b"x")]), tmp_path,
            "member '../evil.txt' would be written outside the destination")


@pytest.mark.parametrize("name", ["/etc/evil", "C:\\evil.txt", "c:evil.txt", "\\\\server\\share\\evil.txt"])
def test_absolute_paths_in_a_zip_are_refused(tmp_path, name):
    refused(zip_with(tmp_path / "a.zip", [(name, b"x")]), tmp_path, f"member '{name}' has an absolute path")


def test_absolute_paths_in_a_tar_are_refused(tmp_path):
    refused(tar_with(tmp_path / "a.tar", [("ok/a.txt", b"1"), ("/tmp/evil.txt", b"x")]), tmp_path,
            "member '/tmp/evil.txt' has an absolute path and would be written outside the destination.")


def test_a_zip_symlink_is_refused(tmp_path):
    link = zipfile.ZipInfo("a/link")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    refused(zip_with(tmp_path / "a.zip", [("a/x.txt", b"1"), (link, b"/etc/passwd")]), tmp_path,
            "Refused archive: member 'a/link' is a symbolic link; only files and folders are accepted.")


def test_a_zip_device_is_refused(tmp_path):
    device = zipfile.ZipInfo("a/dev")
    device.external_attr = (stat.S_IFCHR | 0o666) << 16
    refused(zip_with(tmp_path / "a.zip", [(device, b"")]), tmp_path, "member 'a/dev' is a device file")


@pytest.mark.parametrize(("kind", "what"), [(tarfile.SYMTYPE, "a symbolic link"), (tarfile.LNKTYPE, "a hard link"),
                                            (tarfile.CHRTYPE, "a device file"), (tarfile.BLKTYPE, "a device file"),
                                            (tarfile.FIFOTYPE, "a FIFO")])
def test_tar_links_devices_and_fifos_are_refused(tmp_path, kind, what):
    archive = tar_with(tmp_path / "a.tar", [("a/x.txt", b"1"), tar_info("a/special", kind)])
    refused(archive, tmp_path, f"Refused archive: member 'a/special' is {what}; only files and folders are accepted.")


def test_a_zip_bomb_is_refused_by_its_member_ratio(tmp_path):
    archive = zip_with(tmp_path / "bomb.zip", [("big.bin", bytes(50 * MIB))])
    assert archive.stat().st_size < 100_000
    message = refused(archive, tmp_path, "over the 200:1 limit (a possible zip bomb).", Limits(max_ratio=200))
    assert re.fullmatch(r"Refused archive: member 'big\.bin' is compressed \d+:1, over .*", message)


def test_a_tar_gz_bomb_is_refused_by_the_archive_ratio(tmp_path):
    archive = tar_with(tmp_path / "bomb.tar.gz", [("big.bin", bytes(50 * MIB))], "w:gz")
    refused(archive, tmp_path, "over the 200:1 limit (a possible archive bomb).")


def test_a_member_over_the_total_size_is_refused(tmp_path):
    archive = tar_with(tmp_path / "big.tar", [("a/x", os.urandom(2000))])
    refused(archive, tmp_path, "Refused archive: it would expand to at least 2.0 KB, over the 1000 bytes limit.",
            Limits(max_total_bytes=1000))


def test_a_header_declaring_25_gb_is_refused_before_any_data_is_read(tmp_path):
    archive = tar_with(tmp_path / "huge.tar", [tar_info("a/huge.bin", size=25 * 1024**3)])  # the header alone
    refused(archive, tmp_path, "Refused archive: it would expand to at least 25.0 GB, over the 20.0 GB limit.")


def test_a_member_holding_more_than_it_declares_is_stopped_while_streaming(tmp_path, monkeypatch):
    archive = zip_with(tmp_path / "a.zip", [("a/first.bin", bytes(5000)), ("a/liar.bin", b"0123456789")])
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, *args, **kwargs: io.BytesIO(bytes(5000)))
    refused(archive, tmp_path, "Refused archive: member 'a/liar.bin' holds more data than its header declares (10 bytes).")


def test_too_many_members_are_refused(tmp_path):
    archive = tar_with(tmp_path / "many.tar", [(f"a/{i}.png", b"1") for i in range(4)])
    refused(archive, tmp_path, "Refused archive: it has more than 3 members.", Limits(max_members=3))
    assert extract(archive, tmp_path / "ok", Limits(max_members=4)) == 4


def test_duplicate_names_are_refused(tmp_path):
    refused(tar_with(tmp_path / "twice.tar", [("a/x", b"1"), ("a/x", b"2")]), tmp_path,
            "Refused archive: member 'a/x' appears twice.")
    with pytest.warns(UserWarning, match="Duplicate name"):
        archive = zip_with(tmp_path / "twice.zip", [("a/x", b"1"), ("a/./x", b"2"), ("a/x", b"3")])
    refused(archive, tmp_path, "Refused archive: member 'a/./x' appears twice.")


def test_a_name_that_is_both_a_file_and_a_folder_is_refused(tmp_path):
    refused(tar_with(tmp_path / "a.tar", [("a", b"1"), ("a/b", b"2")]), tmp_path, "'a' is both a file and a folder")
    refused(zip_with(tmp_path / "b.zip", [("a/b", b"2"), ("a", b"1")]), tmp_path, "'a' is both a file and a folder")


def test_a_file_that_is_not_an_archive_is_refused(tmp_path):
    text = tmp_path / "notes.zip"
    text.write_text("hello, these are notes\n" * 100)
    with pytest.raises(ArchiveError, match=re.escape("Refused archive: 'notes.zip' is not a zip or tar archive.")):
        archive_kind(text)
    refused(text, tmp_path, "'notes.zip' is not a zip or tar archive.")


def test_a_damaged_archive_is_refused_and_partial_files_removed(tmp_path):
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as opened:
        opened.writestr("a/first.txt", b"fine")
        opened.writestr("a/second.txt", b"original data")
    patched(archive, b"original data", b"tampered data")
    refused(archive, tmp_path, "Refused archive: member 'a/second.txt' could not be extracted (Bad CRC-32")


def test_a_truncated_tar_gz_is_refused(tmp_path):
    archive = tar_with(tmp_path / "a.tar.gz", [("a/x.bin", os.urandom(100_000)), ("a/y.bin", b"1")], "w:gz")
    archive.write_bytes(archive.read_bytes()[:50_000])
    refused(archive, tmp_path, "Refused archive: it cannot be read")


@pytest.mark.parametrize(("field_offset", "value", "message"), [(8, b"\x01\x00", "member 'a/x' is encrypted."),
                                                                 (10, b"\x63\x00", "unsupported compression method")])
def test_encrypted_or_unknown_zip_members_are_refused(tmp_path, field_offset, value, message):
    archive = zip_with(tmp_path / "a.zip", [("a/x", b"1")])
    data = bytearray(archive.read_bytes())
    central = data.index(b"PK\x01\x02")
    data[central + field_offset:central + field_offset + 2] = value
    archive.write_bytes(bytes(data))
    refused(archive, tmp_path, message)


def test_the_destination_must_be_new_and_is_left_alone(tmp_path):
    archive = zip_with(tmp_path / "a.zip", CLASS_FOLDERS)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        extract(archive, tmp_path / "out")
    assert files_under(tmp_path / "out") == {"keep.txt": b"mine"}


def write_archive(path: Path, kind: str, members: list[tuple[str, bytes]]) -> Path:
    return zip_with(path, members) if kind == "zip" else tar_with(path, members, kind)


@pytest.mark.parametrize("kind", ["zip", "w", "w:gz", "w:bz2", "w:xz"])
def test_class_folders_extract_from_every_kind(tmp_path, kind):
    archive = write_archive(tmp_path / "upload.bin", kind, CLASS_FOLDERS)
    assert archive_kind(archive) == ("zip" if kind == "zip" else "tar")
    assert extract(archive, tmp_path / "out") == 2
    assert files_under(tmp_path / "out") == dict(CLASS_FOLDERS)


def test_the_content_decides_not_the_name(tmp_path):
    archive = tar_with(tmp_path / "photos.zip", CLASS_FOLDERS, "w:gz")
    assert archive_kind(archive) == "tar"
    assert extract(archive, tmp_path / "out") == 2
    assert files_under(tmp_path / "out") == dict(CLASS_FOLDERS)


def test_a_tar_ending_with_a_zip_is_a_tar(tmp_path):
    inner = zip_with(tmp_path / "inner.zip", [("x.txt", b"x")]).read_bytes()
    archive = tar_with(tmp_path / "a.tar", [("cats/a.png", b"cat"), ("cats/inner.zip", inner)])
    assert zipfile.is_zipfile(archive)
    assert archive_kind(archive) == "tar"
    assert extract(archive, tmp_path / "out") == 2
    assert files_under(tmp_path / "out") == {"cats/a.png": b"cat", "cats/inner.zip": inner}


def test_modes_are_fixed_whatever_the_archive_and_umask_say(tmp_path):
    archive = tar_with(tmp_path / "a.tar", [tar_info("cats", tarfile.DIRTYPE, mode=0o700),
                                             tar_info("cats/empty.png", mode=0o4777)])
    umask = os.umask(0o077)
    try:
        assert extract(archive, tmp_path / "out") == 1
    finally:
        os.umask(umask)
    for path, mode in ((tmp_path / "out", 0o755), (tmp_path / "out" / "cats", 0o755),
                       (tmp_path / "out" / "cats" / "empty.png", 0o644)):
        assert stat.S_IMODE(path.stat().st_mode) == mode, path


def test_harmless_entries_are_skipped_and_nameless_files_refused(tmp_path):
    archive = zip_with(tmp_path / "a.zip", [("./", b""), ("cats/", b""), ("./cats/a.png", b"cat"), ("empty/", b"")])
    assert extract(archive, tmp_path / "zip") == 1
    assert files_under(tmp_path / "zip") == {"cats/a.png": b"cat"}
    assert (tmp_path / "zip" / "empty").is_dir()
    refused(tar_with(tmp_path / "b.tar", [tar_info(".", tarfile.DIRTYPE), ("a/b", b"1"), ("./.", b"x")]), tmp_path,
            "Refused archive: member './.' has no file name.")


@pytest.mark.parametrize("kind", ["zip", "w:gz"])
def test_unicode_names_extract(tmp_path, kind):
    archive = write_archive(tmp_path / "u.bin", kind, [("chats/été 猫.png", b"miaou"), ("日本/a.png", b"1")])
    assert extract(archive, tmp_path / "out") == 2
    assert (tmp_path / "out" / "chats" / "été 猫.png").read_bytes() == b"miaou"


@pytest.mark.parametrize("tar_format", [tarfile.PAX_FORMAT, tarfile.GNU_FORMAT])
def test_a_non_utf8_tar_name_keeps_its_bytes(tmp_path, tar_format):
    raw = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    archive = tar_with(tmp_path / "n.tar", [(f"c/{raw}", b"latin-1")], tar_format=tar_format)
    assert extract(archive, tmp_path / "out") == 1
    assert os.listdir(os.fsencode(tmp_path / "out" / "c")) == [b"caf\xe9.txt"]
    assert (tmp_path / "out" / "c" / raw).read_bytes() == b"latin-1"


def test_a_non_utf8_name_in_a_message_stays_printable(tmp_path):
    raw = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    message = refused(tar_with(tmp_path / "n.tar", [(f"c/{raw}", b"1"), (f"c/{raw}", b"2")]), tmp_path, "appears twice")
    assert "member 'c/caf\ufffd.txt' appears twice" in message
    message.encode("utf-8")


def test_a_cp437_zip_name_is_kept_as_zipfile_reads_it(tmp_path):
    archive = zip_with(tmp_path / "a.zip", [("c/cafX.txt", b"legacy")])
    patched(archive, b"cafX", b"caf\x82")  # 0x82 is é in cp437, written without the UTF-8 flag
    with zipfile.ZipFile(archive) as opened:
        assert opened.infolist()[0].flag_bits & 0x800 == 0
    assert extract(archive, tmp_path / "out") == 1
    assert files_under(tmp_path / "out") == {"c/café.txt": b"legacy"}


HOSTILE = {
    "a climbing name": (lambda d: tar_with(d / "a.tar.gz", [("ok/a.txt", b"1"), ("../evil.txt", b"x")], "w:gz"),
                        "member '../evil.txt' would be written outside the destination"),
    "a symbolic link": (lambda d: tar_with(d / "a.tar.bz2", [("a/x", b"1"), tar_info("a/l", tarfile.SYMTYPE)], "w:bz2"),
                        "member 'a/l' is a symbolic link"),
    "a tar.gz bomb": (lambda d: tar_with(d / "b.tar.gz", [("big.bin", bytes(50 * MIB))], "w:gz"),
                      "over the 200:1 limit (a possible archive bomb)."),
    "a zip bomb": (lambda d: zip_with(d / "b.zip", [("big.bin", bytes(50 * MIB))]), "(a possible zip bomb)"),
    "too many members": (lambda d: tar_with(d / "m.tar", [(f"a/{i}", b"1") for i in range(2_001)]),
                         "it has more than 2000 members."),
    "a duplicate": (lambda d: tar_with(d / "t.tar", [("a/x", b"1"), ("a/./x", b"2")]), "member 'a/./x' appears twice."),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_listing_in_place_refuses_what_extracting_refuses_and_leaves_no_copy(tmp_path, case):
    make, message = HOSTILE[case]
    with pytest.raises(ArchiveError, match=re.escape(message)):
        list_members(make(tmp_path), tmp_path / "copy.tar", Limits(max_members=2_000))
    assert not (tmp_path / "copy.tar").exists()


@pytest.mark.parametrize("kind", ["zip", "w", "w:gz", "w:xz"])
def test_members_read_in_place_from_every_kind(tmp_path, kind):
    listing = list_members(write_archive(tmp_path / "upload.bin", kind, CLASS_FOLDERS), tmp_path / "copy.tar")
    assert [(e.name, listing.reader.read(e)) for e in listing.files] == CLASS_FOLDERS
    assert listing.folders == {("cats",), ("dogs",), ("dogs", "sub")}
    assert (tmp_path / "copy.tar").exists() == (kind in ("w:gz", "w:xz"))


def test_a_member_read_in_place_is_refused_when_it_holds_more_than_it_declares(tmp_path, monkeypatch):
    listing = list_members(zip_with(tmp_path / "a.zip", [("a/liar.bin", b"0123456789")]), tmp_path / "copy.tar")
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, *args, **kwargs: io.BytesIO(bytes(5000)))
    with pytest.raises(ArchiveError, match=re.escape("member 'a/liar.bin' holds more data than its header declares")):
        listing.reader.read(listing.files[0])


def test_a_tar_member_cut_short_is_refused_when_read(tmp_path):
    archive = tar_with(tmp_path / "a.tar", [("a/x.bin", os.urandom(100_000))])
    listing = list_members(archive, tmp_path / "copy.tar")
    archive.write_bytes(archive.read_bytes()[:50_000])
    with pytest.raises(ArchiveError, match=re.escape("member 'a/x.bin' is cut short")):
        listing.reader.read(listing.files[0])


def test_a_file_that_does_not_start_as_an_archive_is_refused_before_it_is_read(tmp_path):
    zeros = tmp_path / "zeros.zip"
    zeros.write_bytes(bytes(64 * MIB))
    started = time.process_time()
    with pytest.raises(ArchiveError, match=re.escape("'zeros.zip' is not a zip or tar archive.")):
        list_members(zeros, tmp_path / "copy.tar")
    assert time.process_time() - started < 0.5
    for damaged in (b"PK", b"\x1f\x8b" + bytes(100), b"not an archive at all"):
        (tmp_path / "short").write_bytes(damaged)
        with pytest.raises(ArchiveError):
            extract(tmp_path / "short", tmp_path / "out")


@pytest.mark.parametrize("kind", ["zip", "w:gz"])
def test_only_members_over_a_mib_are_held_to_the_ratio(tmp_path, kind):
    """``RATIO_FLOOR`` (1 MiB): a member or an archive that expands to 1 MiB
    may compress as well as it likes (1 MiB of zeros: about 1000:1); one
    byte more and the ratio limit applies (the member's in a zip, the
    whole archive's in a tar.gz, which declares no compressed sizes)."""
    assert RATIO_FLOOR == MIB
    at_floor = write_archive(tmp_path / "floor.bin", kind, [("a/zeros.bin", bytes(MIB))])
    assert extract(at_floor, tmp_path / "floor", Limits(max_ratio=200))
    assert (tmp_path / "floor" / "a" / "zeros.bin").read_bytes() == bytes(MIB)
    over = write_archive(tmp_path / "over.bin", kind, [("a/zeros.bin", bytes(MIB + 1))])
    refused(over, tmp_path, "over the 200:1 limit (a possible", Limits(max_ratio=200))


@pytest.mark.parametrize("kind", ["zip", "w", "w:gz"])
def test_members_of_one_copy_block_and_of_several_extract_and_read_exactly(tmp_path, kind):
    """Members are copied in blocks of ``CHUNK`` (1 MiB): one of exactly a
    block, and one of two blocks and a byte, extracted and read in place."""
    assert CHUNK == MIB
    members = [("a/one.bin", os.urandom(CHUNK)), ("a/several.bin", os.urandom(2 * CHUNK + 1)), ("a/small.bin", b"x")]
    archive = write_archive(tmp_path / "upload.bin", kind, members)
    assert extract(archive, tmp_path / "out")
    assert files_under(tmp_path / "out") == dict(members)
    listing = list_members(archive, tmp_path / "copy.tar")
    assert [(entry.name, listing.reader.read(entry)) for entry in listing.files] == members
