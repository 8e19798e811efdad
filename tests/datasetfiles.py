"""Tiny image datasets and archives made on the fly for dataset tests."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

from PIL import Image

COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255), "grey": (128, 128, 128)}


def image_bytes(colour=(255, 0, 0), size=(8, 6), fmt="PNG", mode="RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, colour if mode == "RGB" else colour[0]).save(out, format=fmt)
    return out.getvalue()


def class_folders(root: Path, counts: dict[str, int], fmt: str = "PNG", size=(8, 6)) -> Path:
    """``root/<class>/<n>.png`` in each class's colour (classes named after COLOURS)."""
    for name, count in counts.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(count):
            (folder / f"{n:03d}.{fmt.lower()}").write_bytes(image_bytes(COLOURS[name], size, fmt))
    return root


def tar_of(folder: Path, archive: Path, arcroot: str = "") -> Path:
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            tar.add(path, arcname=os.path.join(arcroot, str(path.relative_to(folder))), recursive=False)
    return archive
