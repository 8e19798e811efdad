"""Images paired with their label images, in a server folder or an uploaded
archive (``trainer.detection.sourcefiles``), torch-free.

Two layouts of images paired with label images (a third, COCO JSON's, draws
the masks from annotations instead: ``shapes``):

- **folders**: a folder of images and a folder of label images with the
  same names but for the extension (``images/cat1.jpg`` and
  ``labels/cat1.png``), the label folder called ``labels``, ``masks`` or
  ``annotations`` unless the user names both. Subfolders mirror each other;
  one called ``train``, ``val`` or ``test`` puts its images in that split.
- **voc**: Pascal VOC's, ``JPEGImages/`` and ``SegmentationClass/`` (palette
  PNGs), the splits listed in ``ImageSets/Segmentation/<split>.txt``.

Each label image without its image and, in the folders layout, each image
without its label image is reported with the file and why, and left out;
the pairs found are kept.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from trainer.dataset_sources import SourceError
from trainer.detection.annotations import Problem
from trainer.detection.common import Folder, split_of, stem, swap_folder
from trainer.detection.sourcefiles import SourceFiles, TooLarge
from trainer.imageio import is_image

from .shapes import has_coco_json

LAYOUTS = ("auto", "folders", "voc", "coco")
LABEL_FOLDERS = ("labels", "masks", "annotations")
VOC_IMAGES, VOC_LABELS = ("JPEGImages",), ("SegmentationClass",)
VOC_SPLITS = "ImageSets/Segmentation"
SPLIT_FILE_BYTES = 16 * 1024**2
# Text files at the source's top that name its classes, one a line.
CLASS_FILES = ("classes.txt", "labels.txt", "class_names.txt")


@dataclass
class Pair:
    image: str
    label: str
    split: str | None  # the split the source gives it, or None


@dataclass
class Paired:
    layout: str  # "folders" or "voc"
    pairs: list[Pair] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def _parts(name: str) -> Folder:
    return tuple(part for part in name.strip().strip("/").split("/") if part not in ("", "."))


def chosen_layout(files: SourceFiles, chosen: str) -> str:
    """The layout named, or for "auto" VOC's when a ``SegmentationClass``
    folder holds label images, else the folders layout when a label folder
    (``LABEL_FOLDERS``) holds images, else COCO's when a JSON file is there
    (masks drawn from its annotations, ``shapes``), else the folders layout."""
    if chosen not in LAYOUTS:
        raise SourceError(f"Unknown layout “{chosen}”: the layouts are {', '.join(LAYOUTS)}.")
    if chosen != "auto":
        return chosen
    images = [name for name in files.names() if is_image(name)]
    if any(swap_folder(name, VOC_LABELS, VOC_LABELS) is not None for name in images):
        return "voc"
    if not any(swap_folder(name, (folder,), (folder,)) is not None for name in images for folder in LABEL_FOLDERS) \
            and has_coco_json(files):
        return "coco"
    return "folders"


def label_folders(files: SourceFiles, image_folder: str, label_folder: str) -> tuple[Folder, Folder]:
    """The folders of images and of label images of the folders layout: those
    the user named, or ``images`` and the first of ``LABEL_FOLDERS`` that
    holds images; SourceError naming what is missing."""
    names = [name for name in files.names() if is_image(name)]
    images, labels = _parts(image_folder or "images"), _parts(label_folder) if label_folder else None
    if not any(swap_folder(name, images, images) is not None for name in names):
        raise SourceError(f"No folder “{'/'.join(images)}” of images in the source: give the images in one, and "
                          f"their label images in another.")
    candidates = [labels] if labels is not None else [(folder,) for folder in LABEL_FOLDERS]
    for folder in candidates:
        if any(swap_folder(name, folder, folder) is not None for name in names):
            return images, folder
    wanted = " or ".join(f"“{'/'.join(folder)}”" for folder in candidates)
    raise SourceError(f"No folder {wanted} of label images in the source, beside the images' folder.")


def pair_images(files: SourceFiles, images: Folder, labels: Folder, layout: str) -> Paired:
    """Each label image under ``labels`` with the image under ``images`` of
    its name (its folders mirrored, any extension)."""
    by_key: dict[str, list[str]] = defaultdict(list)
    names = [name for name in files.names() if is_image(name)]
    for name in names:
        if swap_folder(name, images, images) is not None and swap_folder(name, labels, labels) is None:
            by_key[stem(name)].append(name)
    paired = Paired(layout, problems=list(files.problems))
    used = set()
    for name in names:
        if swap_folder(name, labels, labels) is None:
            continue
        key = stem(swap_folder(name, labels, images) or name)
        matches = by_key.get(key, [])
        used.add(key)
        if len(matches) == 1:
            paired.pairs.append(Pair(matches[0], name, split_of(matches[0]) if layout == "folders" else None))
        elif not matches:
            paired.problems.append(Problem(name, None, f"image missing: no image {key}.* for this label image"))
        else:
            paired.problems.append(Problem(name, None, f"several images match this label image "
                                                       f"({', '.join(matches)}); it is left out"))
    if layout == "folders":
        paired.problems += [Problem(image, None, f"label image missing: no label image "
                                                 f"{stem(swap_folder(image, images, labels) or image)}.* for it; the "
                                                 f"image is left out")
                            for key, found in by_key.items() if key not in used for image in found]
    paired.problems.sort(key=lambda problem: problem.file)
    return paired


def voc_splits(files: SourceFiles, paired: Paired) -> None:
    """The VOC pairs put in the splits ``ImageSets/Segmentation`` lists them
    in (``train``, ``val``, ``test``; ``trainval`` only where neither of its
    parts is given); an image listed with no label image is reported."""
    listed: dict[str, str] = {}
    names = set(files.names())
    for split in ("train", "val", "test", "trainval"):
        name = f"{VOC_SPLITS}/{split}.txt"
        if name not in names:
            continue
        try:
            text = files.read(name, SPLIT_FILE_BYTES).decode("utf-8-sig", errors="replace")
        except TooLarge as exc:
            paired.problems.append(Problem(name, None, str(exc)))
            continue
        for line in text.split():
            listed.setdefault(line, "train" if split == "trainval" else split)
    if not listed:
        return
    by_stem = {PurePosixPath(pair.image).stem: pair for pair in paired.pairs}
    for image_id, split in listed.items():
        if image_id in by_stem:
            by_stem[image_id].split = split
        else:
            paired.problems.append(Problem(f"{VOC_SPLITS}/{split}.txt", None,
                                           f"lists {image_id}, which has no label image in SegmentationClass"))
    paired.problems.sort(key=lambda problem: problem.file)


def read_pairs(files: SourceFiles, layout: str, image_folder: str = "", label_folder: str = "") -> Paired:
    """The source's pairs in ``layout`` (``LAYOUTS`` but COCO's, which pairs
    no label image), with the problems found."""
    chosen = chosen_layout(files, layout)
    if chosen == "coco":
        raise SourceError("A COCO JSON source draws its masks from its annotations: it has no label images to pair.")
    if chosen == "voc":
        paired = pair_images(files, VOC_IMAGES, VOC_LABELS, "voc")
        voc_splits(files, paired)
        return paired
    images, labels = label_folders(files, image_folder, label_folder)
    return pair_images(files, images, labels, "folders")


def class_file(files: SourceFiles) -> str | None:
    """A file at the source's top naming its classes (``CLASS_FILES``), or None."""
    names = set(files.names())
    return next((name for name in CLASS_FILES if name in names), None)
