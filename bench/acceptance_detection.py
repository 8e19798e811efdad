"""Object detection through the whole loop, as a user drives it over the
API: ``make run``'s launcher on a fresh data folder, then only HTTP.

1. the launcher starts and a user signs up;
2. a Pascal VOC archive of photos is uploaded and built: CIFAR-10 photos
   from ``../shared/data`` (cars, cats, ships) pasted, one or two an image,
   at random places and sizes onto enlarged photos of the other classes,
   with their exact boxes as VOC XML (made here: no detection photos lie
   on this machine);
3. Faster R-CNN MobileNetV3-Large FPN trains; the validation mAP@0.5 is
   read from the job's events as they arrive, and must rise;
4. Detect one answers for held-out images the model never saw (boxes in
   each photo's own pixels);
5. the evaluation of the validation split with the best snapshot (chosen by
   mAP@0.5) gives the mAP@0.5 the training recorded for it;
6. an export is made and downloaded, and its ``detect.py``, run with
   onnxruntime outside the app, gives the app's boxes for the held-out
   images.

One line per step with its time and verdict; the exit code is the number of
failed steps. Not part of the test suite: it takes minutes.

    .venv/bin/python bench/acceptance_detection.py [--images 600] [--size 96] [--epochs 12]
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
from launched import CIFAR, Failed, LaunchedApp, Steps
from PIL import Image

from trainer import eventkinds

OBJECTS = ("automobile", "cat", "ship")
BOX_TOLERANCE = 0.5  # pixels of the photo: the export's boxes against the app's
FOUND_SCORE = 0.3  # a detection counted as finding an object (with an IoU of 0.5)
FLOOR = 0.05  # the lowest score Detect one answers with: the export is compared on every box


def cifar_photos() -> dict[str, list[Image.Image]]:
    """CIFAR-10's training photos by class name."""
    found: dict[str, list[Image.Image]] = {}
    with tarfile.open(CIFAR) as source:
        for member in source:
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 4 and parts[1] == "train":
                found.setdefault(parts[2], []).append(Image.open(io.BytesIO(source.extractfile(member).read())).convert("RGB"))
    return found


def composite(photos: dict[str, list[Image.Image]], size: int, rng: np.random.Generator) -> tuple[Image.Image, list]:
    """A size×size photo of a background class with one or two objects pasted, and their (class, box)."""
    backgrounds = [name for name in photos if name not in OBJECTS]
    scene = photos[backgrounds[rng.integers(len(backgrounds))]][rng.integers(5000)].resize((size, size))
    boxes = []
    for _ in range(rng.integers(1, 3)):
        name = OBJECTS[rng.integers(len(OBJECTS))]
        side = int(rng.integers(size // 3, size // 2 + 1))
        x, y = (int(v) for v in rng.integers(0, size - side + 1, 2))
        if any(x < b[2] and b[0] < x + side and y < b[3] and b[1] < y + side for _, b in boxes):
            continue  # no overlaps: each box holds one whole photo
        scene.paste(photos[name][rng.integers(5000)].resize((side, side)), (x, y))
        boxes.append((name, (x, y, x + side, y + side)))
    return scene, boxes


def voc_xml(name: str, size: int, boxes: list) -> str:
    objects = "".join(f"<object><name>{label}</name><difficult>0</difficult><bndbox><xmin>{b[0]}</xmin>"
                      f"<ymin>{b[1]}</ymin><xmax>{b[2]}</xmax><ymax>{b[3]}</ymax></bndbox></object>"
                      for label, b in boxes)
    return (f"<annotation><filename>{name}</filename><size><width>{size}</width><height>{size}</height>"
            f"<depth>3</depth></size>{objects}</annotation>")


def voc_archive(target: Path, count: int, held_out: int, size: int) -> list[tuple[bytes, list]]:
    """A zip of ``count`` composites in VOC's folders; ``held_out`` more, as JPEG bytes with their boxes."""
    photos, rng = cifar_photos(), np.random.default_rng(7)
    with zipfile.ZipFile(target, "w") as out:
        for number in range(count):
            scene, boxes = composite(photos, size, rng)
            data = io.BytesIO()
            scene.save(data, format="JPEG", quality=92)
            out.writestr(f"VOC/JPEGImages/{number:05d}.jpg", data.getvalue())
            out.writestr(f"VOC/Annotations/{number:05d}.xml", voc_xml(f"{number:05d}.jpg", size, boxes))
    unseen = []
    for _ in range(held_out):
        scene, boxes = composite(photos, size, rng)
        data = io.BytesIO()
        scene.save(data, format="JPEG", quality=92)
        unseen.append((data.getvalue(), boxes))
    return unseen


def iou(a, b) -> float:
    inter = max(0, min(a[2], b[2]) - max(a[0], b[0])) * max(0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=600)
    parser.add_argument("--size", type=int, default=96, help="the photos' side, in pixels")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--held-out", type=int, default=8)
    args = parser.parse_args()
    if not CIFAR.exists():
        print(f"needs {CIFAR.name} in ../shared/data")
        return 1
    folder = Path(tempfile.mkdtemp(prefix="digitslike-acceptance-detection-"))
    app = LaunchedApp(folder, "acceptance")
    state: dict = {}
    steps = Steps(10)

    def launch() -> str:
        app.wait_up()
        app.sign_up()
        return f"launcher up at {app.url}, signed up"

    def upload() -> str:
        archive = folder / "voc.zip"
        state["unseen"] = voc_archive(archive, args.images, args.held_out, args.size)
        fields = {"task": "detection", "name": "pasted photos", "source": "archive", "width": str(args.size),
                  "height": str(args.size), "val_percent": "20", "test_percent": "0", "encoding": "none"}
        with open(archive, "rb") as handle:
            job = app.call("POST", "/api/datasets", data=fields, files={"archive": ("voc.zip", handle)}).json()
        app.wait_job(job["id"], 900)
        state["dataset"] = job["id"]
        manifest = app.call("GET", f"/api/datasets/{job['id']}").json()["manifest"]
        counts = {split: info["count"] for split, info in manifest["splits"].items()}
        return f"{archive.stat().st_size / 2**20:.1f} MiB VOC zip; classes {manifest['classes']}, built {counts}"

    def train() -> str:
        params = {"name": "detector", "dataset": state["dataset"],
                  "network": {"source": "standard", "name": "fasterrcnn_mobilenet_v3_large_fpn"},
                  "epochs": args.epochs, "batch_size": 8, "solver": "adamw", "lr": 0.001, "weight_decay": 0.0001,
                  "lr_policy": "cosine", "flip": "horizontal", "mean": "pixel", "seed": 3}
        job = app.call("POST", "/api/models", json=params).json()["jobs"][0]
        state["model"] = job["id"]
        seen: list[float] = []
        deadline = time.monotonic() + 3600
        while (status := app.job(job["id"])["status"]) not in ("done", "failed", "aborted"):
            for event in app.events(job["id"], eventkinds.VAL)[len(seen):]:
                seen.append(event["data"]["map50"])
                print(f"{'':10s} live: epoch {event['data']['epoch']:.0f} mAP@0.5 {seen[-1]:.3f}", flush=True)
            if time.monotonic() > deadline:
                raise Failed("the training took over an hour")
            time.sleep(2)
        if status != "done":
            raise Failed(f"the training job is {status}: {app.job(job['id'])['error']}")
        state["result"] = app.events(job["id"], eventkinds.RESULT)[-1]["data"]
        final = state["result"]["final"]
        seen = [event["data"]["map50"] for event in app.events(job["id"], eventkinds.VAL)]
        if len(seen) < 2 or seen[-1] <= seen[0]:
            raise Failed(f"mAP@0.5 did not rise: {seen}")
        return (f"{state['result']['images_per_s']:.1f} images/s; mAP@0.5 by epoch {[round(v, 3) for v in seen]}; "
                f"final mAP@0.5:0.95 {final['val_map']:.3f}, precision {final['val_precision']:.3f}, "
                f"recall {final['val_recall']:.3f}")

    def detect() -> str:
        state["answers"], hits, objects = [], 0, 0
        for image, boxes in state["unseen"]:
            answer = app.call("POST", f"/api/models/{state['model']}/detect",
                              files={"image": ("unseen.jpg", image)}).json()
            state["answers"].append(answer)
            found = [b for b in answer["boxes"] if b["score"] >= FOUND_SCORE]
            for name, box in boxes:
                objects += 1
                hits += any(b["class"] == name and iou(box, (b["x1"], b["y1"], b["x2"], b["y2"])) >= 0.5 for b in found)
        return (f"{len(state['answers'])} unseen photos; {hits} of their {objects} objects found "
                f"(score ≥ {FOUND_SCORE}, IoU ≥ 0.5)")

    def evaluate() -> str:
        job = app.call("POST", f"/api/models/{state['model']}/evaluate", json={"split": "val"}).json()
        app.wait_job(job["id"], 900)
        report = app.call("GET", f"/api/evaluations/{job['id']}/report").json()["report"]
        best = state["result"]["best"]
        found = report.get("map50")
        if best["metric"] != "val_map50" or found is None or abs(found - best["value"]) > 1e-6:
            raise Failed(f"evaluation mAP@0.5 {found} against the best snapshot's {best}")
        return (f"best snapshot (epoch {best['epoch']:.0f}): mAP@0.5 {found:.4f} on the validation split, as the "
                f"training recorded; {len(report['per_class'])} classes' AP, {report['false_positives_total']} false "
                f"positives, {report['missed_total']} missed boxes")

    def export() -> str:
        job = app.call("POST", f"/api/models/{state['model']}/export", json={}).json()
        app.wait_job(job["id"], 900)
        archive = app.call("GET", f"/api/exports/{job['id']}/archive").content
        unpacked = folder / "export"
        with zipfile.ZipFile(io.BytesIO(archive)) as opened:
            opened.extractall(unpacked)
        script = next(unpacked.rglob("detect.py"))
        largest, compared = 0.0, 0
        for number, ((image, _), answer) in enumerate(zip(state["unseen"], state["answers"], strict=True)):
            photo = script.parent / f"unseen-{number}.jpg"
            photo.write_bytes(image)
            done = subprocess.run([sys.executable, script.name, photo.name, str(FLOOR)], cwd=script.parent,
                                  capture_output=True, text=True, timeout=120)
            if done.returncode:
                raise Failed(f"detect.py failed: {done.stderr[-800:]}")
            printed = [line.split("\t") for line in done.stdout.splitlines() if line.count("\t") == 5]
            mine = answer["boxes"]
            if [row[0] for row in printed] != [b["class"] for b in mine]:
                raise Failed(f"photo {number}: detect.py found {[r[0] for r in printed]}, the app {[b['class'] for b in mine]}")
            for row, box in zip(printed, mine, strict=True):
                compared += 1
                largest = max(largest, *(abs(float(v) - box[k]) for v, k in zip(row[2:], ("x1", "y1", "x2", "y2"),
                                                                                  strict=True)))
        if largest > BOX_TOLERANCE:
            raise Failed(f"detect.py's boxes differ from the app's by up to {largest:.3f} px")
        return (f"{len(archive) / 2**20:.1f} MiB archive; its detect.py (onnxruntime) gives the app's {compared} boxes "
                f"on {len(state['answers'])} unseen photos, corners within {largest:.3f} px")

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
