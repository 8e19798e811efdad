"""Label images read as class indices, torch-free.

A label image gives each pixel of its image a class, in one of the ways
DIGITS and Pascal VOC store them:

- **values**: a palette PNG's indices (VOC's ``SegmentationClass``) or a
  grayscale image's values are the class indices;
- **colours**: an RGB image whose colours a colour map names, a line a
  class (``parse_colour_map``).

What a dataset stores is the same whichever: one uint8 a pixel, the class
index from 0, and ``IGNORE`` (255) for pixels excluded from the loss and
the metrics (VOC's object borders, the padding a resize adds). ``Coding``
says how one source's label images become that; the planner chooses it
(``trainer.tasks.segmentation_plan``) and the build's pool applies it to
each label image (``read_classes``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from PIL import Image

from trainer.imageio import ImageError, load_label_image
from trainer.targets import TargetError

IGNORE = 255  # the stored value of pixels that count for nothing
MAX_CLASSES = 255  # classes 0 to 254
INVALID = -1  # in a Coding's table: a value that is neither a class nor ignored
# Names of colour map lines whose pixels are ignored rather than a class.
IGNORE_NAMES = ("ignore", "void")
# Modes whose pixel values are read as they are.
VALUE_MODES = ("P", "L", "1", "I;16", "I;16B", "I;16L", "I;16N", "I")

VOC_CLASSES = ("background", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
               "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train",
               "tvmonitor")


def voc_colours(count: int = 256) -> list[tuple[int, int, int]]:
    """Pascal VOC's palette: the colour of each index (index 255, its border, is (224, 224, 192))."""
    colours = []
    for index in range(count):
        red = green = blue = 0
        bits = index
        for shift in range(7, -1, -1):
            red |= (bits & 1) << shift
            green |= ((bits >> 1) & 1) << shift
            blue |= ((bits >> 2) & 1) << shift
            bits >>= 3
        colours.append((red, green, blue))
    return colours


@dataclass(frozen=True)
class ColourLine:
    colour: tuple[int, int, int]
    name: str  # "" when the line names none


def parse_colour_map(text: str) -> list[ColourLine]:
    """A colour map: one line a class, in class order, ``R G B`` (0 to 255,
    separated by spaces or commas) and optionally its name after them; a
    line named ``ignore`` or ``void`` is the colour of ignored pixels, not a
    class. Blank lines and ``#`` comments are skipped. ValueError listing
    every wrong line."""
    lines, problems, first = [], [], {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = re.split(r"[\s,]+", line, maxsplit=3)
        try:
            colour = tuple(int(part) for part in parts[:3])
        except ValueError:
            colour = ()
        if len(colour) != 3 or not all(0 <= c <= 255 for c in colour):
            problems.append(f"Line {number} (“{line}”) does not start with three numbers from 0 to 255 (red, green, "
                            f"blue).")
            continue
        if colour in first:
            problems.append(f"Line {number} gives the colour {colour[0]} {colour[1]} {colour[2]} again (first on line "
                            f"{first[colour]}).")
            continue
        first[colour] = number
        lines.append(ColourLine(colour, parts[3].strip() if len(parts) > 3 else ""))  # type: ignore[arg-type]
    if problems:
        raise ValueError(" ".join(problems))
    return lines


def parse_class_names(text: str) -> list[str]:
    """Class names, one a line in class order (index 0 first); blank lines at the end are dropped."""
    names = [line.strip() for line in text.splitlines()]
    while names and not names[-1]:
        names.pop()
    if any(not name for name in names):
        raise ValueError(f"Line {names.index('') + 1} of the class names is blank: give every class a name, in order.")
    return names


@dataclass(frozen=True)
class Coding:
    """How one source's label images become stored classes.

    With ``colours`` None, a pixel's value (palette index or gray level) is
    looked up in ``table`` (256 entries: the class, ``IGNORE``, or
    ``INVALID``); otherwise its colour, packed as ``r << 16 | g << 8 | b``, in
    ``colours`` (a colour not in it is invalid). ``classes`` is the count of
    classes (for the reasons given), ``ignore_value`` the source value or
    colour of ignored pixels as the user knows it, for those reasons too."""

    table: tuple[int, ...] | None
    colours: dict[int, int] | None
    classes: int
    ignore_value: str = ""

    @staticmethod
    def of_values(classes: int | None, ignore: int | None, foreground_255: bool = False) -> Coding:
        """Values are classes: ``classes`` of them (None: every value but the
        ignored one), ``ignore`` the value of ignored pixels (or None), and
        with ``foreground_255`` a 0/255 mask's 255 is class 1."""
        count = MAX_CLASSES if classes is None else classes
        table = [value if value < count else INVALID for value in range(256)]
        if foreground_255:
            table[255] = 1
        elif ignore is not None:
            table[ignore] = IGNORE
        return Coding(tuple(table), None, count, "" if ignore is None or foreground_255 else str(ignore))

    @staticmethod
    def of_colours(lines: list[ColourLine]) -> Coding:
        """Colours are classes, a colour map's lines in order (those named ignore: ignored)."""
        colours, classes, ignored = {}, 0, []
        for line in lines:
            packed = line.colour[0] << 16 | line.colour[1] << 8 | line.colour[2]
            if line.name.lower() in IGNORE_NAMES:
                colours[packed] = IGNORE
                ignored.append(" ".join(map(str, line.colour)))
            else:
                colours[packed] = classes
                classes += 1
        return Coding(None, colours, classes, " or ".join(ignored))


def holds_colours(image: Image.Image) -> bool:
    """Whether a label image is in colour (an RGB image that is not gray)."""
    if image.mode in VALUE_MODES:
        return False
    pixels = np.asarray(image.convert("RGB"))
    return bool((pixels[..., 0] != pixels[..., 1]).any() or (pixels[..., 1] != pixels[..., 2]).any())


def values(image: Image.Image) -> np.ndarray:
    """A label image's pixels as values (H×W int64): palette indices, gray
    levels, 0 and 1 for a bilevel image, the first channel of a gray RGB
    image (``holds_colours`` says it is gray)."""
    if image.mode == "1":
        return np.asarray(image, dtype=np.int64)
    if image.mode in VALUE_MODES:
        return np.asarray(image).astype(np.int64)
    if image.mode in ("LA", "PA"):
        return np.asarray(image)[..., 0].astype(np.int64)
    return np.asarray(image.convert("RGB"))[..., 0].astype(np.int64)


def read_classes(source: str | bytes, coding: Coding, name: str, size: tuple[int, int]) -> np.ndarray:
    """The label image ``source`` (a path or bytes; ``name`` as the user
    knows it) as stored classes (H×W uint8), checked to be ``size`` (its
    image's width and height as shown). TargetError with the reason: a file
    that is no image, a size that differs, a value or colour that is no class."""
    try:
        image = load_label_image(source, max_pixels=Image.MAX_IMAGE_PIXELS)
    except ImageError as exc:
        raise TargetError(f"label image {name}: {exc}") from None
    if image.size != size:
        raise TargetError(f"label image {name} is {image.width}×{image.height}, its image {size[0]}×{size[1]}")
    if coding.colours is None:
        return _looked_up(image, coding, name)
    return _by_colour(image, coding, name)


def _looked_up(image: Image.Image, coding: Coding, name: str) -> np.ndarray:
    if holds_colours(image):
        raise TargetError(f"label image {name} is in colour; its label type says values: choose colours, with a "
                          f"colour map")
    found = values(image)
    if found.max(initial=0) > 255:
        raise TargetError(f"label image {name} holds the value {int(found.max())}; values above 255 are not classes")
    table = np.array(coding.table, dtype=np.int16)
    stored = table[found]
    if (stored == INVALID).any():
        y, x = (int(v) for v in np.argwhere(stored == INVALID)[0])
        value = int(found[y, x])
        raise TargetError(f"label image {name} holds the value {value} (first at x {x}, y {y}), which is not one of "
                          f"the {coding.classes} classes (0 to {coding.classes - 1})"
                          + (f" nor the ignore value {coding.ignore_value}" if coding.ignore_value else ""))
    return stored.astype(np.uint8)


def _by_colour(image: Image.Image, coding: Coding, name: str) -> np.ndarray:
    assert coding.colours is not None
    pixels = np.asarray(image.convert("RGB")).astype(np.int64)
    packed = pixels[..., 0] << 16 | pixels[..., 1] << 8 | pixels[..., 2]
    found, inverse = np.unique(packed, return_inverse=True)
    classes = np.array([coding.colours.get(int(colour), INVALID) for colour in found], dtype=np.int16)
    if (classes == INVALID).any():
        colour = int(found[np.flatnonzero(classes == INVALID)[0]])
        y, x = (int(v) for v in np.argwhere(packed == colour)[0])
        shown = f"{colour >> 16} {colour >> 8 & 255} {colour & 255}"
        raise TargetError(f"label image {name} has the colour {shown} (first at x {x}, y {y}), which the colour map "
                          f"does not name")
    return classes[inverse.reshape(packed.shape)].astype(np.uint8)
