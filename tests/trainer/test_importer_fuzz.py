"""The archive importer and the image decoder fuzzed with hypothesis:
random bytes, and real archives and images that are then truncated, given
the wrong magic, or have bytes overwritten, with members that climb out,
absolute names, links, nested archives and sizes that lie. Each either
works or raises the project's own error with a message (ArchiveError,
ImageError: the build skips the image with its reason); nothing is written
outside the destination, and a refusal leaves nothing behind. Each property
runs a few seconds."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import shutil
import tarfile
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from PIL import Image

from trainer.archives import ArchiveError, Limits, extract, list_members
from trainer.imageio import RESIZE_MODES, ImageError, load_image, resize

# No shrinking: a failure shows the example as generated, and a run stays bounded.
FUZZ = settings(max_examples=100, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck))
LIMITS = Limits(max_total_bytes=4 * 1024**2, max_members=50, max_ratio=200.0)
NAMES = st.one_of(st.sampled_from(["a.png", "cats/b.png", "../up.png", "/etc/passwd", "c:/x.png", "a/../../b",
                                   "dir/", "a\\..\\..\\b", "dup.png", "x" * 300, "./a/./c.png"]),
                  st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), min_size=1, max_size=20))
CONTENT = st.one_of(st.binary(max_size=64), st.just(b"\0" * 200_000))


@st.composite
def member_lists(draw) -> list[tuple[str, bytes, str]]:
    """(name, data, kind) with kind file, dir, symlink, hardlink, fifo or lie (a tar header declaring 25 GB that
    are not there; in a zip, a file)."""
    kinds = st.sampled_from(["file"] * 8 + ["dir", "symlink", "hardlink", "fifo", "lie"])
    return draw(st.lists(st.tuples(NAMES, CONTENT, kinds), min_size=1, max_size=4))


def tar_bytes(members: list[tuple[str, bytes, str]], compress: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.size = {"file": len(data), "lie": 25 * 1024**3}.get(kind, 0)
            info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
                         "fifo": tarfile.FIFOTYPE}.get(kind, tarfile.REGTYPE)
            info.linkname = "/etc/passwd" if kind in ("symlink", "hardlink") else ""
            archive.addfile(info, io.BytesIO(data) if kind == "file" else None)  # a lie's header only
    raw = out.getvalue()
    return {"tar": lambda b: b, "gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[compress](raw)


def zip_bytes(members: list[tuple[str, bytes, str]]) -> bytes:
    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        warnings.simplefilter("ignore")  # a duplicate name is what the importer must refuse
        for name, data, kind in members:
            info = zipfile.ZipInfo(name + ("/" if kind == "dir" and not name.endswith("/") else ""))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = {"symlink": 0o120777, "fifo": 0o010644, "dir": 0o040755}.get(kind, 0o100644) << 16
            archive.writestr(info, b"" if kind == "dir" else data)
    return out.getvalue()


@st.composite
def archives(draw) -> bytes:
    """An archive (zip, tar, tar.gz, tar.bz2, tar.xz; maybe holding another), maybe damaged."""
    members = draw(member_lists())
    if draw(st.booleans()):
        members.append(("nested.zip", zip_bytes(draw(member_lists())), "file"))
    kind = draw(st.sampled_from(["zip", "tar", "gz", "bz2", "xz"]))
    data = bytearray(zip_bytes(members) if kind == "zip" else tar_bytes(members, kind))
    damage = draw(st.sampled_from(["none"] * 3 + ["truncate", "magic", "flip"]))
    if damage == "truncate":
        del data[draw(st.integers(0, len(data) - 1)):]
    elif damage == "magic":
        data[:4] = draw(st.binary(min_size=4, max_size=4))
    elif damage == "flip":
        for _ in range(draw(st.integers(1, 8))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


def everything_under(folder: Path) -> set[Path]:
    return {Path(root) / name for root, dirs, files in os.walk(folder) for name in dirs + files}


def check_extract(work: Path, data: bytes) -> None:
    archive, destination = work / "upload.bin", work / "out" / "dest"
    archive.write_bytes(data)
    destination.parent.mkdir()
    before = everything_under(work)
    try:
        extract(archive, destination, LIMITS)
    except ArchiveError as exc:
        assert str(exc).startswith("Refused archive: ")
        assert everything_under(work) == before, "a refused archive leaves nothing behind"
        return
    for path in everything_under(work) - before:
        assert path.resolve().is_relative_to(destination.resolve()), f"{path} was written outside the destination"
        assert not path.is_symlink() and (path.is_file() or path.is_dir()), f"{path} is not a plain file or folder"


def check_listing(work: Path, data: bytes) -> None:
    archive, copy = work / "upload.bin", work / "upload.tar"
    archive.write_bytes(data)
    try:
        listing = list_members(archive, copy, LIMITS)
    except ArchiveError as exc:
        assert str(exc).startswith("Refused archive: ")
        assert not copy.exists(), "a refused archive leaves no uncompressed copy"
        return
    for entry in listing.files:
        try:
            assert len(listing.reader.read(entry)) == entry.size
        except ArchiveError as exc:  # a member cut short, or holding more than it declares
            assert str(exc).startswith("Refused archive: member ")


@pytest.fixture
def work(tmp_path):
    """A folder emptied before each example."""

    def fresh() -> Path:
        shutil.rmtree(tmp_path / "w", ignore_errors=True)
        (tmp_path / "w").mkdir()
        return tmp_path / "w"

    return fresh


@FUZZ
@given(data=st.one_of(archives(), st.binary(max_size=600)))
def test_extracting_any_archive_works_or_refuses_it_and_never_writes_outside(work, data):
    check_extract(work(), data)


@FUZZ
@given(data=st.one_of(archives(), st.binary(max_size=600)))
def test_listing_and_reading_any_archive_in_place_works_or_refuses_it_and_keeps_no_copy(work, data):
    check_listing(work(), data)


def image_bytes(fmt: str, size: tuple[int, int], mode: str) -> bytes:
    out = io.BytesIO()
    pixels = np.random.default_rng(size[0]).integers(0, 255, (size[1], size[0], len(mode)), dtype=np.uint8)
    Image.fromarray(pixels[:, :, 0] if mode == "L" else pixels, mode).save(out, fmt)
    return out.getvalue()


@st.composite
def images(draw) -> bytes:
    """An image in an accepted format, maybe truncated, maybe with bytes overwritten (dimensions, chunks)."""
    fmt = draw(st.sampled_from(["PNG", "JPEG", "GIF", "BMP", "TIFF", "WEBP", "PPM"]))
    size = (draw(st.integers(1, 40)), draw(st.integers(1, 40)))
    data = bytearray(image_bytes(fmt, size, "L" if fmt in ("GIF", "PPM") and draw(st.booleans()) else "RGB"))
    if draw(st.booleans()):
        del data[draw(st.integers(1, len(data))):]
    for _ in range(draw(st.integers(0, 6))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


@FUZZ
@given(data=st.one_of(images(), st.binary(max_size=300)), channels=st.sampled_from([1, 3]),
       mode=st.sampled_from(RESIZE_MODES), target=st.tuples(st.integers(1, 64), st.integers(1, 64)))
def test_any_bytes_decode_to_an_image_of_the_asked_size_or_an_image_error(data, channels, mode, target):
    try:
        image = load_image(data, channels, draft=target, resize_mode=mode)
    except ImageError as exc:
        assert str(exc), "the build shows the reason"
        return
    pixels = resize(image, *target, mode, np.random.default_rng(0))
    assert pixels.shape == (target[1], target[0], channels) and pixels.dtype == np.uint8
