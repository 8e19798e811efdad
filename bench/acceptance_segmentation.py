"""Semantic segmentation through the whole loop, as a user drives it over the
API: ``make run``'s launcher on a fresh data folder, then only HTTP.

1. the launcher starts and a user signs up;
2. a Pascal VOC archive of photos with their label images is uploaded and
   built: CIFAR-10 photos from ``../shared/data`` (cars, cats, ships)
   pasted through an elliptical cut-out, one or two an image, onto enlarged
   photos of the other classes, each shape's pixels its class in a palette
   PNG with VOC's ignored border around it (made here: no segmentation
   photos lie on this machine), resized to the dataset's size on the way;
3. a segmenter trains with flips, rotation and zoom; the validation mIoU is
   read from the job's events as they arrive, and must rise;
4. Segment one answers for held-out photos the model never saw: a mask at
   each photo's own size, scored here against its truth;
5. the evaluation of the validation split with the best snapshot (chosen by
   mIoU) gives the mIoU the training recorded for it;
6. the held-out photos and their label images, uploaded as an archive in
   the folders layout, are evaluated: every pair read, none left out;
7. an export is made and downloaded, and its ``segment.py``, run with
   onnxruntime outside the app, gives each held-out photo the app's mask,
   pixel for pixel.

One line per step with its time and verdict; the exit code is the number of
failed steps. Not part of the test suite: it takes minutes.

    .venv/bin/python bench/acceptance_segmentation.py [--images 600] [--width 160] [--height 120]
        [--built 128x96] [--network unet] [--epochs 15]
"""

from __future__ import annotations

import argparse
import base64
import io
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
from acceptance_detection import OBJECTS, cifar_photos
from launched import CIFAR, Failed, LaunchedApp, Steps
from PIL import Image, ImageDraw, ImageFilter

from trainer import eventkinds
from trainer.segmentation.labels import IGNORE, voc_colours

CLASSES = ("background", *OBJECTS)
BORDER = 2  # VOC's ignored band around each shape, in pixels of the photo


def scene(photos: dict[str, list[Image.Image]], size: tuple[int, int],
          rng: np.random.Generator) -> tuple[Image.Image, np.ndarray]:
    """A photo of a background class with one or two objects pasted through
    an ellipse, and its classes (H×W uint8: 0 background, 1 + the object's
    index, ``IGNORE`` on the band around each shape)."""
    width, height = size
    backgrounds = [name for name in photos if name not in OBJECTS]
    picture = photos[backgrounds[rng.integers(len(backgrounds))]][rng.integers(5000)].resize(size)
    classes = np.zeros((height, width), dtype=np.uint8)
    edges = np.zeros((height, width), dtype=bool)
    for _ in range(rng.integers(1, 3)):
        index = int(rng.integers(len(OBJECTS)))
        w, h = int(rng.integers(width // 4, width // 2)), int(rng.integers(height // 4, height // 2))
        x, y = int(rng.integers(0, width - w)), int(rng.integers(0, height - h))
        cut = Image.new("L", (w, h))
        ImageDraw.Draw(cut).ellipse((0, 0, w - 1, h - 1), fill=255)
        picture.paste(photos[OBJECTS[index]][rng.integers(5000)].resize((w, h)), (x, y), cut)
        inside = np.zeros((height, width), dtype=bool)
        inside[y:y + h, x:x + w] = np.asarray(cut) > 0
        classes[inside] = index + 1
        grown = np.asarray(Image.fromarray(inside).filter(ImageFilter.MaxFilter(2 * BORDER + 1)))
        shrunk = np.asarray(Image.fromarray(inside).filter(ImageFilter.MinFilter(2 * BORDER + 1)))
        edges |= grown & ~shrunk
    classes[edges] = IGNORE
    return picture, classes


def jpeg(picture: Image.Image) -> bytes:
    data = io.BytesIO()
    picture.save(data, format="JPEG", quality=92)
    return data.getvalue()


def palette_png(classes: np.ndarray) -> bytes:
    image = Image.frombytes("P", classes.shape[::-1], classes.tobytes())
    image.putpalette([c for colour in voc_colours() for c in colour])
    data = io.BytesIO()
    image.save(data, format="PNG")
    return data.getvalue()


def archives(folder: Path, count: int, held_out: int, size: tuple[int, int]) -> list[tuple[bytes, np.ndarray]]:
    """``folder/voc.zip``: ``count`` scenes in VOC's folders; ``folder/unseen.zip``: ``held_out`` more in the
    folders layout (``images/``, ``labels/``), also returned as JPEG bytes with their classes."""
    photos, rng = cifar_photos(), np.random.default_rng(11)
    with zipfile.ZipFile(folder / "voc.zip", "w") as out:
        for number in range(count):
            picture, classes = scene(photos, size, rng)
            out.writestr(f"VOC/JPEGImages/{number:05d}.jpg", jpeg(picture))
            out.writestr(f"VOC/SegmentationClass/{number:05d}.png", palette_png(classes))
    unseen = []
    with zipfile.ZipFile(folder / "unseen.zip", "w") as out:
        for number in range(held_out):
            picture, classes = scene(photos, size, rng)
            unseen.append((jpeg(picture), classes))
            out.writestr(f"unseen/images/{number:03d}.jpg", unseen[-1][0])
            out.writestr(f"unseen/labels/{number:03d}.png", palette_png(classes))
    return unseen


def confusion_of(predicted: np.ndarray, truth: np.ndarray, classes: int) -> np.ndarray:
    """The pixel confusion matrix (rows the true class) of the labelled pixels."""
    labelled = truth != IGNORE
    return np.bincount(truth[labelled].astype(int) * classes + predicted[labelled].clip(0, classes - 1),
                       minlength=classes * classes).reshape(classes, classes)


def miou(confusion: np.ndarray) -> float:
    """The mean IoU over the classes in the truth or the prediction, as the app's evaluation computes it."""
    hits, union = np.diag(confusion), confusion.sum(0) + confusion.sum(1) - np.diag(confusion)
    return float((hits[union > 0] / union[union > 0]).mean())


def decoded(png: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(png))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=600)
    parser.add_argument("--width", type=int, default=160, help="the photos' width, in pixels")
    parser.add_argument("--height", type=int, default=120)
    parser.add_argument("--built", default="128x96", help="the dataset's width x height")
    parser.add_argument("--network", default="unet")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--held-out", type=int, default=8)
    args = parser.parse_args()
    if not CIFAR.exists():
        print(f"needs {CIFAR.name} in ../shared/data")
        return 1
    built_width, built_height = (int(v) for v in args.built.split("x"))
    folder = Path(tempfile.mkdtemp(prefix="digitslike-acceptance-segmentation-"))
    app = LaunchedApp(folder, "acceptance")
    state: dict = {}
    steps = Steps(12)

    def launch() -> str:
        app.wait_up()
        app.sign_up()
        return f"launcher up at {app.url}, signed up"

    def upload() -> str:
        state["unseen"] = archives(folder, args.images, args.held_out, (args.width, args.height))
        archive = folder / "voc.zip"
        fields = {"task": "segmentation", "name": "pasted photos", "source": "archive", "width": str(built_width),
                  "height": str(built_height), "resize_mode": "squash", "val_percent": "20", "test_percent": "0",
                  "encoding": "png", "class_names": "\n".join(CLASSES)}
        with open(archive, "rb") as handle:
            job = app.call("POST", "/api/datasets", data=fields, files={"archive": ("voc.zip", handle)}).json()
        app.wait_job(job["id"], 900)
        state["dataset"] = job["id"]
        manifest = app.call("GET", f"/api/datasets/{job['id']}").json()["manifest"]
        counts = {split: info["count"] for split, info in manifest["splits"].items()}
        if manifest["classes"] != list(CLASSES) or manifest["labelling"]["layout"] != "voc":
            raise Failed(f"read as {manifest['labelling']} with the classes {manifest['classes']}")
        return (f"{archive.stat().st_size / 2**20:.1f} MiB VOC zip of {args.width}x{args.height} photos; classes "
                f"{manifest['classes']}, built at {built_width}x{built_height}: {counts}")

    def train() -> str:
        params = {"name": "segmenter", "dataset": state["dataset"], "network": {"source": "standard", "name": args.network},
                  "epochs": args.epochs, "batch_size": 16, "solver": "adamw", "lr": 0.003, "weight_decay": 0.0001,
                  "lr_policy": "cosine", "flip": "horizontal", "rotation": 10.0, "scale": 0.1, "mean": "pixel",
                  "seed": 3}
        job = app.call("POST", "/api/models", json=params).json()["jobs"][0]
        state["model"] = job["id"]
        seen: list[float] = []
        deadline = time.monotonic() + 3600
        while (status := app.job(job["id"])["status"]) not in ("done", "failed", "aborted"):
            for event in app.events(job["id"], eventkinds.VAL)[len(seen):]:
                seen.append(event["data"]["miou"])
                print(f"{'':10s} live: epoch {event['data']['epoch']:.0f} mIoU {seen[-1]:.3f}", flush=True)
            if time.monotonic() > deadline:
                raise Failed("the training took over an hour")
            time.sleep(2)
        if status != "done":
            raise Failed(f"the training job is {status}: {app.job(job['id'])['error']}")
        state["result"] = app.events(job["id"], eventkinds.RESULT)[-1]["data"]
        final = state["result"]["final"]
        seen = [event["data"]["miou"] for event in app.events(job["id"], eventkinds.VAL)]
        if len(seen) < 2 or seen[-1] <= seen[0]:
            raise Failed(f"mIoU did not rise: {seen}")
        ious = {row["class"]: row["iou"] for row in state["result"]["per_class"]["val"]}
        return (f"{state['result']['images_per_s']:.1f} images/s; mIoU by epoch {[round(v, 3) for v in seen]}; "
                f"final pixel accuracy {final['val_pixel_accuracy']:.3f}, Dice {final['val_dice']:.3f}; IoU per class "
                + ", ".join(f"{name} {'none' if value is None else f'{value:.3f}'}" for name, value in ious.items()))

    def segment() -> str:
        state["answers"], confusion = [], np.zeros((len(CLASSES), len(CLASSES)), dtype=np.int64)
        for image, truth in state["unseen"]:
            answer = app.call("POST", f"/api/models/{state['model']}/segment",
                              files={"image": ("unseen.jpg", image)}).json()
            mask = decoded(answer["mask"])
            if mask.shape != truth.shape or (answer["width"], answer["height"]) != (args.width, args.height):
                raise Failed(f"a {mask.shape} mask for a {truth.shape} photo")
            state["answers"].append(mask)
            confusion += confusion_of(mask, truth, len(CLASSES))
        return (f"{len(state['answers'])} unseen photos, masks at their own {args.width}x{args.height}; against "
                f"their truth, at that size: mIoU {miou(confusion):.3f}, pixel accuracy "
                f"{np.trace(confusion) / confusion.sum():.3f}")

    def evaluate() -> str:
        job = app.call("POST", f"/api/models/{state['model']}/evaluate", json={"split": "val"}).json()
        app.wait_job(job["id"], 900)
        report = app.call("GET", f"/api/evaluations/{job['id']}/report").json()["report"]
        best = state["result"]["best"]
        if best["metric"] != "val_miou" or abs(report["miou"] - best["value"]) > 1e-6:
            raise Failed(f"evaluation mIoU {report['miou']} against the best snapshot's {best}")
        worst = report["worst"][0]
        return (f"best snapshot (epoch {best['epoch']:.0f}): mIoU {report['miou']:.4f} on the validation split, as "
                f"the training recorded; pixel accuracy {report['pixel_accuracy']:.3f}; worst image "
                f"{worst['name']} at {worst['miou']:.3f}")

    def evaluate_new() -> str:
        with open(folder / "unseen.zip", "rb") as handle:
            job = app.call("POST", "/api/evaluations", data={"model": str(state["model"]), "source": "archive"},
                           files={"archive": ("unseen.zip", handle)}).json()
        app.wait_job(job["id"], 900)
        report = app.call("GET", f"/api/evaluations/{job['id']}/report").json()["report"]
        if report["count"] != args.held_out or report["skipped"]:
            raise Failed(f"{report['count']} of {args.held_out} pairs read; left out: {report['skipped']}")
        return (f"{report['count']} unseen pairs (folders layout, {args.width}x{args.height} resized as the dataset): "
                f"mIoU {report['miou']:.4f}, pixel accuracy {report['pixel_accuracy']:.3f}, none left out")

    def export() -> str:
        job = app.call("POST", f"/api/models/{state['model']}/export", json={}).json()
        app.wait_job(job["id"], 900)
        archive = app.call("GET", f"/api/exports/{job['id']}/archive").content
        unpacked = folder / "export"
        with zipfile.ZipFile(io.BytesIO(archive)) as opened:
            opened.extractall(unpacked)
        script = next(unpacked.rglob("segment.py"))
        for number, ((image, _), mine) in enumerate(zip(state["unseen"], state["answers"], strict=True)):
            photo, mask = script.parent / f"unseen-{number}.jpg", script.parent / f"unseen-{number}.png"
            photo.write_bytes(image)
            done = subprocess.run([sys.executable, script.name, photo.name, mask.name], cwd=script.parent,
                                  capture_output=True, text=True, timeout=120)
            if done.returncode:
                raise Failed(f"segment.py failed: {done.stderr[-800:]}")
            theirs = np.asarray(Image.open(mask))
            if theirs.shape != mine.shape or (differ := int((theirs != mine).sum())):
                raise Failed(f"photo {number}: segment.py's mask differs from the app's "
                             f"({theirs.shape} against {mine.shape}, {differ if theirs.shape == mine.shape else '?'} "
                             "pixels)")
        return (f"{len(archive) / 2**20:.1f} MiB archive; its segment.py (onnxruntime) gives the app's mask on "
                f"{len(state['answers'])} unseen photos, every pixel")

    try:
        for name, work in (("launch", launch), ("upload", upload), ("train", train), ("segment", segment),
                           ("evaluate", evaluate), ("new images", evaluate_new), ("export", export)):
            if not steps.run(name, work) and name in ("launch", "upload", "train"):
                break
    finally:
        app.close()
        shutil.rmtree(folder, ignore_errors=True)
    print(steps.summary())
    return steps.failures


if __name__ == "__main__":
    sys.exit(main())
