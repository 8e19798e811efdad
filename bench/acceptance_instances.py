"""Instance segmentation through the whole loop, as a user drives it over
the API: ``make run``'s launcher on a fresh data folder, then only HTTP.

1. the launcher starts and a user signs up;
2. a COCO archive of photos with their objects' polygons is uploaded and
   built: CIFAR-10 photos from ``../shared/data`` (cars, cats, ships)
   pasted through an elliptical cut-out, one to three an image and often
   two of one class, onto enlarged photos of the other classes, each object
   an annotation whose polygon traces its ellipse (made here: no instance
   photos lie on this machine), resized to the dataset's size on the way;
3. a Mask R-CNN trains with flips and zoom; the validation mask mAP is read
   from the job's events as they arrive, and must rise;
4. Detect one answers for held-out photos the model never saw: boxes and a
   map of their objects at each photo's own size, scored here against the
   truth (an object found when a detection of its class scoring at least
   ``FOUND_SCORE`` covers it with a mask IoU of 0.5);
5. the evaluation of the validation split with the best snapshot (chosen by
   mask mAP@0.5) gives the mask mAP the training recorded for it;
6. an export is made and downloaded, and its ``instances.py``, run with
   onnxruntime outside the app, gives each held-out photo the app's objects.

One line per step with its time and verdict; the exit code is the number of
failed steps. Not part of the test suite: it takes many minutes.

    .venv/bin/python bench/acceptance_instances.py [--images 400] [--width 128] [--height 96]
        [--built 96x72] [--epochs 12]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
from acceptance_detection import OBJECTS, cifar_photos
from acceptance_segmentation import jpeg
from launched import CIFAR, Failed, LaunchedApp, Steps
from PIL import Image, ImageDraw

from trainer import eventkinds

FOUND_SCORE = 0.5
POLYGON_POINTS = 24
FLOOR = 0.05  # Detect one's lowest score: the export is compared on every object


def ellipse_polygon(x: float, y: float, w: float, h: float) -> list[float]:
    """The ellipse inside the box (x, y, w, h) as a COCO polygon: x, y pairs."""
    angles = np.linspace(0, 2 * np.pi, POLYGON_POINTS, endpoint=False)
    points = np.stack([x + w / 2 + (w / 2) * np.cos(angles), y + h / 2 + (h / 2) * np.sin(angles)], axis=1)
    return [round(float(v), 2) for v in points.ravel()]


def scene(photos: dict[str, list[Image.Image]], size: tuple[int, int],
          rng: np.random.Generator) -> tuple[Image.Image, list[tuple[int, list[float], np.ndarray]]]:
    """A photo of a background class with objects pasted through ellipses
    that do not overlap; each object's class index, polygon and mask (as the
    polygon draws it, H×W bool)."""
    width, height = size
    backgrounds = [name for name in photos if name not in OBJECTS]
    picture = photos[backgrounds[rng.integers(len(backgrounds))]][rng.integers(5000)].resize(size)
    taken = np.zeros((height, width), dtype=bool)
    objects = []
    for _ in range(int(rng.integers(1, 4))):
        for _try in range(10):
            index = int(rng.integers(len(OBJECTS)))
            w, h = int(rng.integers(width // 5, width // 2)), int(rng.integers(height // 5, height // 2))
            x, y = int(rng.integers(0, width - w)), int(rng.integers(0, height - h))
            polygon = ellipse_polygon(x, y, w, h)
            drawn = Image.new("L", size)
            ImageDraw.Draw(drawn).polygon(polygon, fill=255)
            mask = np.asarray(drawn) > 0
            if (mask & taken).any():
                continue
            taken |= mask
            cut = Image.fromarray(np.asarray(drawn)[y:y + h, x:x + w])
            picture.paste(photos[OBJECTS[index]][rng.integers(5000)].resize((w, h)), (x, y), cut)
            objects.append((index, polygon, mask))
            break
    return picture, objects


def coco_zip(path: Path, scenes: list[tuple[Image.Image, list]], size: tuple[int, int]) -> None:
    images, annotations = [], []
    with zipfile.ZipFile(path, "w") as out:
        for number, (picture, objects) in enumerate(scenes, start=1):
            name = f"{number:05d}.jpg"
            out.writestr(f"coco/images/{name}", jpeg(picture))
            images.append({"id": number, "file_name": name, "width": size[0], "height": size[1]})
            for index, polygon, mask in objects:
                ys, xs = np.nonzero(mask)
                annotations.append({"id": len(annotations) + 1, "image_id": number, "category_id": index + 1,
                                    "segmentation": [polygon], "area": int(mask.sum()), "iscrowd": 0,
                                    "bbox": [int(xs.min()), int(ys.min()), int(np.ptp(xs)) + 1, int(np.ptp(ys)) + 1]})
        out.writestr("coco/annotations/instances.json", json.dumps({
            "images": images, "annotations": annotations,
            "categories": [{"id": i + 1, "name": name} for i, name in enumerate(OBJECTS)]}))


def decoded(png: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(png))))


def found_objects(answer: dict, objects: list) -> int:
    """The true objects a detection of their class scoring at least ``FOUND_SCORE`` covers with a mask IoU of 0.5."""
    drawn = decoded(answer["instances"])
    found = 0
    for index, _, mask in objects:
        for number, box in enumerate(answer["boxes"], start=1):
            theirs = drawn == number
            if box["index"] == index and box["score"] >= FOUND_SCORE and \
                    (theirs & mask).sum() >= 0.5 * (theirs | mask).sum():
                found += 1
                break
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--width", type=int, default=128, help="the photos' width, in pixels")
    parser.add_argument("--height", type=int, default=96)
    parser.add_argument("--built", default="96x72", help="the dataset's width x height")
    parser.add_argument("--network", default="maskrcnn_mobilenet_v3_large_fpn")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--held-out", type=int, default=8)
    args = parser.parse_args()
    if not CIFAR.exists():
        print(f"needs {CIFAR.name} in ../shared/data")
        return 1
    built_width, built_height = (int(v) for v in args.built.split("x"))
    size = (args.width, args.height)
    folder = Path(tempfile.mkdtemp(prefix="digitslike-acceptance-instances-"))
    app = LaunchedApp(folder, "acceptance")
    state: dict = {}
    steps = Steps(12)

    def launch() -> str:
        app.wait_up()
        app.sign_up()
        return f"launcher up at {app.url}, signed up"

    def upload() -> str:
        photos, rng = cifar_photos(), np.random.default_rng(11)
        scenes = [scene(photos, size, rng) for _ in range(args.images)]
        state["unseen"] = [(jpeg(picture), objects) for picture, objects in
                           (scene(photos, size, rng) for _ in range(args.held_out))]
        archive = folder / "coco.zip"
        coco_zip(archive, scenes, size)
        fields = {"task": "instance_segmentation", "name": "pasted photos", "source": "archive",
                  "width": str(built_width), "height": str(built_height), "resize_mode": "squash",
                  "val_percent": "20", "test_percent": "0", "encoding": "png"}
        with open(archive, "rb") as handle:
            job = app.call("POST", "/api/datasets", data=fields, files={"archive": ("coco.zip", handle)}).json()
        app.wait_job(job["id"], 900)
        state["dataset"] = job["id"]
        manifest = app.call("GET", f"/api/datasets/{job['id']}").json()["manifest"]
        counts = {split: info["count"] for split, info in manifest["splits"].items()}
        if manifest["classes"] != list(OBJECTS) or manifest["labelling"]["layout"] != "coco":
            raise Failed(f"read as {manifest['labelling']} with the classes {manifest['classes']}")
        objects = sum(len(found) for _, found in scenes)
        same_class = sum(len(found) > len({index for index, _, _ in found}) for _, found in scenes)
        return (f"{archive.stat().st_size / 2**20:.1f} MiB COCO zip of {args.width}x{args.height} photos, {objects} "
                f"objects ({same_class} photos with two of one class); classes {manifest['classes']}, built at "
                f"{built_width}x{built_height}: {counts}")

    def train() -> str:
        params = {"name": "instances", "dataset": state["dataset"],
                  "network": {"source": "standard", "name": args.network}, "epochs": args.epochs, "batch_size": 8,
                  "solver": "adamw", "lr": 0.002, "weight_decay": 0.0001, "lr_policy": "cosine",
                  "flip": "horizontal", "scale": 0.1, "mean": "pixel", "seed": 3}
        job = app.call("POST", "/api/models", json=params).json()["jobs"][0]
        state["model"] = job["id"]
        seen: list[float] = []
        deadline = time.monotonic() + 3 * 3600
        while (status := app.job(job["id"])["status"]) not in ("done", "failed", "aborted"):
            for event in app.events(job["id"], eventkinds.VAL)[len(seen):]:
                seen.append(event["data"]["mask_map50"])
                print(f"{'':10s} live: epoch {event['data']['epoch']:.0f} mask mAP@0.5 {seen[-1]:.3f}", flush=True)
            if time.monotonic() > deadline:
                raise Failed("the training took over three hours")
            time.sleep(5)
        if status != "done":
            raise Failed(f"the training job is {status}: {app.job(job['id'])['error']}")
        state["result"] = app.events(job["id"], eventkinds.RESULT)[-1]["data"]
        final = state["result"]["final"]
        seen = [event["data"]["mask_map50"] for event in app.events(job["id"], eventkinds.VAL)]
        if len(seen) < 2 or seen[-1] <= seen[0]:
            raise Failed(f"mask mAP did not rise: {seen}")
        return (f"{state['result']['images_per_s']:.1f} images/s; mask mAP@0.5 by epoch {[round(v, 3) for v in seen]};"
                f" final mask mAP@0.5:0.95 {final['val_mask_map']:.3f}, box mAP@0.5 {final['val_box_map50']:.3f}")

    def detect() -> str:
        state["answers"], found, total = [], 0, 0
        for image, objects in state["unseen"]:
            answer = app.call("POST", f"/api/models/{state['model']}/detect",
                              files={"image": ("unseen.jpg", image)}).json()
            if decoded(answer["instances"]).shape != (args.height, args.width):
                raise Failed(f"a {decoded(answer['instances']).shape} map of objects for a {size} photo")
            state["answers"].append(answer)
            found += found_objects(answer, objects)
            total += len(objects)
        return (f"{len(state['answers'])} unseen photos, objects mapped at their own {args.width}x{args.height}: "
                f"{found} of {total} objects found (their class, score ≥ {FOUND_SCORE}, mask IoU ≥ 0.5)")

    def evaluate() -> str:
        job = app.call("POST", f"/api/models/{state['model']}/evaluate", json={"split": "val"}).json()
        app.wait_job(job["id"], 900)
        report = app.call("GET", f"/api/evaluations/{job['id']}/report").json()["report"]
        best = state["result"]["best"]
        if best["metric"] != "val_mask_map50" or abs(report["map50"] - best["value"]) > 1e-6:
            raise Failed(f"evaluation mask mAP@0.5 {report['map50']} against the best snapshot's {best}")
        ap = {name: row["ap50"] for name, row in report["per_class"].items()}
        return (f"best snapshot (epoch {best['epoch']:.0f}): mask mAP@0.5 {report['map50']:.4f} on the validation "
                f"split, as the training recorded; mask AP@0.5 per class "
                + ", ".join(f"{name} {value:.3f}" for name, value in ap.items() if value is not None))

    def export() -> str:
        job = app.call("POST", f"/api/models/{state['model']}/export", json={}).json()
        app.wait_job(job["id"], 900)
        archive = app.call("GET", f"/api/exports/{job['id']}/archive").content
        unpacked = folder / "export"
        with zipfile.ZipFile(io.BytesIO(archive)) as opened:
            opened.extractall(unpacked)
        script = next(unpacked.rglob("instances.py"))
        differ = 0
        for number, ((image, _), answer) in enumerate(zip(state["unseen"], state["answers"], strict=True)):
            photo, objects = script.parent / f"unseen-{number}.jpg", script.parent / f"unseen-{number}.png"
            photo.write_bytes(image)
            done = subprocess.run([sys.executable, script.name, photo.name, str(FLOOR), objects.name],
                                  cwd=script.parent, capture_output=True, text=True, timeout=300)
            if done.returncode:
                raise Failed(f"instances.py failed: {done.stderr[-800:]}")
            classes = [line.split("\t")[0] for line in done.stdout.strip().splitlines()]
            if classes != [box["class"] for box in answer["boxes"]]:
                raise Failed(f"photo {number}: instances.py found {classes}, the app {answer['boxes']}")
            differ += int((np.asarray(Image.open(objects)) != decoded(answer["instances"])).sum())
        return (f"{len(archive) / 2**20:.1f} MiB archive; its instances.py (onnxruntime) finds the app's objects on "
                f"{len(state['answers'])} unseen photos, their maps differing on {differ} pixels of "
                f"{len(state['answers']) * args.width * args.height}")

    try:
        for name, work in (("launch", launch), ("upload", upload), ("train", train), ("detect", detect),
                           ("evaluate", evaluate), ("export", export)):
            if not steps.run(name, work) and name in ("launch", "upload", "train"):
                break
    finally:
        app.close()
        shutil.rmtree(folder, ignore_errors=True)
    print(steps.summary())
    return steps.failures


if __name__ == "__main__":
    sys.exit(main())
