"""Uploaded archives are extracted only when every member is a plain file or
folder that stays inside the destination, within the size and ratio limits;
a refused archive leaves nothing behind."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile

import pytest

from trainer.archives import ArchiveError, Limits, archive_kind, extract


def zip_with(path, members: dict[str, bytes], symlink: str | None = None):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return path


def tar_with(path, members: list[tarfile.TarInfo | tuple[str, bytes]], mode="w"):
    with tarfile.open(path, mode) as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                archive.addfile(member)
            else:
                name, data = member
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return path


def refused(archive, tmp_path, message, limits=None):
    destination = tmp_path / "out"
    with pytest.raises(ArchiveError, match=message):
        extract(archive, destination, limits or Limits())
    assert not destination.exists()


@pytest.mark.parametrize("name", ["../evil.txt", "a/../../evil.txt", "..\\evil.txt"])
def test_zip_slip_is_refused(tmp_path, name):
    refused(zip_with(tmp_path / "a.zip", {"ok/a.txt": b"1", name: b"x"}), tmp_path, "outside the destination")
    assert not (tmp_path / "evil.txt").exists()


def test_absolute_paths_are_refused(tmp_path):
    refused(zip_with(tmp_path / "a.zip", {"/etc/evil": b"x"}), tmp_path, "absolute path")
    refused(tar_with(tmp_path / "a.tar", [("/tmp/evil", b"x")]), tmp_path, "absolute path")
    refused(zip_with(tmp_path / "b.zip", {"C:\\evil": b"x"}), tmp_path, "absolute path")


def test_links_devices_and_fifos_are_refused(tmp_path):
    refused(zip_with(tmp_path / "a.zip", {"a/x.txt": b"1"}, symlink="a/link"), tmp_path, "symbolic link")
    for kind, what in ((tarfile.SYMTYPE, "symbolic link"), (tarfile.LNKTYPE, "hard link"),
                       (tarfile.CHRTYPE, "device file"), (tarfile.FIFOTYPE, "FIFO")):
        info = tarfile.TarInfo("a/special")
        info.type = kind
        info.linkname = "/etc/passwd"
        refused(tar_with(tmp_path / f"{kind!r}.tar", [("a/x.txt", b"1"), info]), tmp_path, what)


def test_a_zip_bomb_is_refused(tmp_path):
    refused(zip_with(tmp_path / "bomb.zip", {"a/zeros.bin": bytes(50 * 1024 * 1024)}), tmp_path, "possible zip bomb")


def test_limits_on_size_count_and_duplicates(tmp_path):
    refused(tar_with(tmp_path / "big.tar", [("a/x", os.urandom(2000))]), tmp_path, "over the 1000 bytes limit",
            Limits(max_total_bytes=1000))
    refused(tar_with(tmp_path / "many.tar", [(f"a/{i}", b"1") for i in range(4)]), tmp_path, "more than 3 members",
            Limits(max_members=3))
    refused(tar_with(tmp_path / "twice.tar", [("a/x", b"1"), ("a/x", b"2")]), tmp_path, "appears twice")


def test_not_an_archive(tmp_path):
    text = tmp_path / "notes.zip"
    text.write_text("hello")
    with pytest.raises(ArchiveError, match="not a zip or tar archive"):
        archive_kind(text)
    refused(text, tmp_path, "not a zip or tar archive")


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_tar_flavours_extract_nested_class_folders(tmp_path, mode):
    archive = tar_with(tmp_path / "x.zip", [("cats/a.png", b"A"), ("dogs/sub/b.png", b"B")], mode)  # name lies
    assert extract(archive, tmp_path / "out") == 2
    assert (tmp_path / "out" / "dogs" / "sub" / "b.png").read_bytes() == b"B"
    assert stat.S_IMODE((tmp_path / "out" / "cats" / "a.png").stat().st_mode) == 0o644


def test_unicode_and_non_utf8_names(tmp_path):
    zipped = zip_with(tmp_path / "u.zip", {"chats/été 猫.png": b"1"})
    assert extract(zipped, tmp_path / "z") == 1
    assert (tmp_path / "z" / "chats" / "été 猫.png").exists()
    raw = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    tarred = tar_with(tmp_path / "n.tar", [(f"c/{raw}", b"1"), ("c/日本.txt", b"2")], "w")
    assert extract(tarred, tmp_path / "t") == 2
    assert b"caf\xe9.txt" in os.listdir(os.fsencode(tmp_path / "t" / "c"))
    legacy = tmp_path / "cp437.zip"
    with zipfile.ZipFile(legacy, "w") as archive:
        info = zipfile.ZipInfo("c/caf\x82.txt")  # written without the UTF-8 flag (cp437)
        archive.writestr(info, b"1")
    assert extract(legacy, tmp_path / "l") == 1
