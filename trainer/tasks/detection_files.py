"""New labelled images for a detector's evaluation: a server folder or an
uploaded archive in one of the formats its dataset import reads (KITTI,
Pascal VOC, COCO, YOLO; ``trainer.detection.importer``), read by the same
readers, which report every bad file or line. Class names are matched to
the model's by name (ignoring case, as the import's class list matches
them): a box of a class the model does not know is reported and left out.

Each image is decoded and placed as the model's dataset build placed its
images (``inference.preprocess.placed``: the build's resize mode, size and
padding) and its boxes moved with its pixels (``Boxes.placed``, with the
build's options from the dataset's manifest), so the detector is scored in
the geometry it learnt. The images are kept as PNGs in the evaluation's
folder, in a store a split of the dataset would be, which the report page
shows and the job batches exactly as it batches a split."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.archives import Limits, MemberReader, list_members
from trainer.dataset_sources import SourceError, inside
from trainer.datastore import EncodedSplitWriter, SplitReader, encode
from trainer.detection.annotations import Problem
from trainer.detection.common import ImportOptions
from trainer.detection.importer import chosen_format, read_source
from trainer.detection.sourcefiles import ArchiveFiles, FolderFiles, SourceFiles
from trainer.detection.targets import Boxes
from trainer.evaluation_files import IMAGES
from trainer.inference.errors import InferenceError
from trainer.inference.model import Loaded, build_options
from trainer.inference.preprocess import placed
from trainer.targets import TargetError

from .detection_plan import FIRST_REASONS, planned_boxes
from .training import FileImages

# A compressed tar's uncompressed copy, in the evaluation's folder while it is read.
UNCOMPRESSED = "archive.tar"


def _files(source: dict[str, Any], config: dict[str, Any], work: Path) -> tuple[SourceFiles, MemberReader | None]:
    if source["type"] == "folder":
        path = Path(source["path"])
        if not inside(path, [Path(root).resolve() for root in config["roots"]]):
            raise InferenceError("The folder is not inside the folders this server may read.")
        return FolderFiles(path), None
    print("checking the archive…", flush=True)
    listing = list_members(Path(source["path"]), work / UNCOMPRESSED, Limits(**config.get("archive_limits", {})))
    return ArchiveFiles(listing), listing.reader


def _row(problem: Problem) -> dict[str, Any]:
    return {"file": problem.file, "line": problem.line, "reason": problem.reason}


def file_images(loaded: Loaded, source: dict[str, Any], config: dict[str, Any], work: Path) -> FileImages:
    """The source's usable images stored in ``work`` (see the module);
    InferenceError when the source cannot be read in the format, or none of
    its images can be used (with the first reasons)."""
    try:
        files, reader = _files(source, config, work)
        label_format = chosen_format(files, source.get("label_format") or "auto")
        print(f"label format: {label_format}", flush=True)
        found = read_source(files, label_format, ImportOptions(class_map={name: name for name in loaded.classes}))
    except SourceError as exc:
        raise InferenceError(str(exc)) from None
    problems = list(found.problems)
    options = build_options(loaded.dataset_dir)
    height, width = loaded.image_size
    shape = (height, width, loaded.channels)
    writer = EncodedSplitWriter(work, IMAGES, shape, len(found.images), Boxes(), "png", 0)
    names = []
    for number, annotated in enumerate(found.images, 1):
        where = files.path_or_member(annotated.image)
        try:
            image = placed(loaded, where if isinstance(where, str) else reader.read(where))
            rows, _ = Boxes().placed(planned_boxes(annotated, loaded.classes), image.shown, image.where.image, options)
        except (InferenceError, TargetError) as exc:
            problems.append(Problem(annotated.image, None, str(exc)))
            continue
        writer.add(encode(image.pixels, "png", 0), rows)
        names.append(annotated.image)
        if number % 100 == 0:
            print(f"read {number} of {len(found.images)} images", flush=True)
    writer.close()
    (work / UNCOMPRESSED).unlink(missing_ok=True)
    if not names:
        reasons = "; ".join(str(problem) for problem in problems[:FIRST_REASONS]) or "it holds no labelled image"
        raise InferenceError(f"No usable image in the {source['type']}: {reasons}.")
    return FileImages(SplitReader(work, IMAGES, "png", shape, Boxes()), names, [_row(p) for p in problems])
