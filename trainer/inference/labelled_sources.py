"""An evaluation's new labelled images: where they are read from (a server
folder inside the folders the server may read, or an uploaded archive
checked against its limits, a compressed tar's uncompressed copy kept in
the evaluation's folder while it is read), and how they are stored (each
image placed as the model's dataset build placed its images, its target
moved with its pixels, kept as PNGs in a store a split of the dataset would
be). A task's ``file_images`` finds the labelled images in its dataset
import's layouts (``trainer.tasks.training``) and stores them here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainer.archives import Limits, MemberReader, list_members
from trainer.dataset_sources import inside
from trainer.datastore import EncodedSplitWriter, SplitReader, encode
from trainer.detection.annotations import Problem
from trainer.detection.sourcefiles import ArchiveFiles, FolderFiles, SourceFiles
from trainer.evaluation_files import IMAGES
from trainer.targets import TargetError, TargetFormat
from trainer.tasks.training import FileImages

from .errors import InferenceError
from .model import Loaded
from .preprocess import Placed, placed

# A compressed tar's uncompressed copy, in the evaluation's folder while it is read.
UNCOMPRESSED = "archive.tar"
FIRST_REASONS = 5  # of the files left out, named when none is usable
# An image's name in the source and what places its target on it as placed.
Labelled = tuple[str, Callable[[Placed], object]]


def open_files(source: dict[str, Any], config: dict[str, Any], work: Path) -> tuple[SourceFiles, MemberReader | None]:
    """The source's files, and the reader of an archive's members (None for
    a folder); InferenceError for a folder the server may not read.
    ArchiveError and SourceError pass through for the caller to word."""
    if source["type"] == "folder":
        path = Path(source["path"])
        if not inside(path, [Path(root).resolve() for root in config["roots"]]):
            raise InferenceError("The folder is not inside the folders this server may read.")
        return FolderFiles(path), None
    print("checking the archive…", flush=True)
    listing = list_members(Path(source["path"]), work / UNCOMPRESSED, Limits(**config.get("archive_limits", {})))
    return ArchiveFiles(listing), listing.reader


def stored(loaded: Loaded, files: SourceFiles, reader: MemberReader | None, labelled: list[Labelled],
           targets: TargetFormat, problems: list[Problem], source: dict[str, Any], work: Path) -> FileImages:
    """The ``labelled`` images that can be used, stored in ``work`` with
    their targets (in ``targets``' format); each that cannot (not an image,
    a target that does not fit it) added to ``problems`` and left out.
    InferenceError when none can be used, with the first reasons."""
    height, width = loaded.image_size
    shape = (height, width, loaded.channels)
    writer = EncodedSplitWriter(work, IMAGES, shape, len(labelled), targets, "png", 0)
    names = []
    for number, (name, target_of) in enumerate(labelled, 1):
        where = files.path_or_member(name)
        try:
            image = placed(loaded, where if isinstance(where, str) else reader.read(where))
            target = target_of(image)
        except (InferenceError, TargetError) as exc:
            problems.append(Problem(name, None, str(exc)))
            continue
        writer.add(encode(image.pixels, "png", 0), target)
        names.append(name)
        if number % 100 == 0:
            print(f"read {number} of {len(labelled)} images", flush=True)
    writer.close()
    (work / UNCOMPRESSED).unlink(missing_ok=True)
    if not names:
        reasons = "; ".join(str(problem) for problem in problems[:FIRST_REASONS]) or "it holds no labelled image"
        raise InferenceError(f"No usable image in the {source['type']}: {reasons}.")
    skipped = [{"file": problem.file, "line": problem.line, "reason": problem.reason} for problem in problems]
    return FileImages(SplitReader(work, IMAGES, "png", shape, targets), names, skipped)
