"""The whole loop at real size, as a user drives it: ``make run``'s launcher
on a fresh data folder, then only HTTP.

1. the launcher starts (migrations, its own redis-server, worker, model
   server, web) and a user signs up;
2. a few thousand CIFAR-10 JPEGs from ``../shared/data`` are uploaded as a
   tar.gz and built as PNG (so the training and evaluation decode their
   splits with the pool of processes: more than 512 images a split);
3. a small ResNet trains for a few epochs; after its first snapshot the
   trainer process is killed (SIGKILL, as the out-of-memory killer does);
   the worker requeues it and it resumes to the end;
4. the same model cloned trains uninterrupted, and both end with the same
   validation loss;
5. an evaluation of the validation split with the last snapshot gives the
   training's final top-1;
6. Classify one answers over the API for a few held-out images;
7. an export is made and downloaded, and its README's own code, run with
   onnxruntime outside the app, gives the app's top class (and the app's
   probabilities, where the README prints them).

One line per step with its time and verdict; the exit code is the number of
failed steps. Not part of the test suite: it takes minutes.

    .venv/bin/python bench/acceptance.py [--per-class 300] [--epochs 3]
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from launched import CIFAR, Failed, LaunchedApp, Steps, cifar_archive

from trainer import eventkinds

TOLERANCE = 1e-5  # relative, on the final validation loss of the resumed and the uninterrupted run


def trainer_pids(job_folder: Path) -> list[int]:
    """The training processes of the job (not the worker's supervisor, whose command names them too)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().split(b"\0")[1:3] == [b"-m", b"trainer.train"] \
                    and Path(os.readlink(entry / "cwd")) == job_folder:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def readme_code(archive: bytes, folder: Path) -> Path:
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        opened.extractall(folder)
    readme = next(folder.rglob("README.md"))
    code = re.search(r"```python\n(.*?)```", readme.read_text(), re.S)
    if not code:
        raise Failed("the export's README has no Python code")
    script = readme.parent / "readme_example.py"
    script.write_text(code.group(1))
    return script


def run_readme(script: Path, image: bytes) -> str:
    """The README's code on one image: given as its argument, or under the name it opens."""
    code = script.read_text()
    named = re.search(r"""Image\.open\(["']([^"']+)["']\)""", code)
    target = script.parent / (named.group(1) if named else "image.jpg")
    target.write_bytes(image)
    done = subprocess.run([sys.executable, script.name, target.name], cwd=script.parent, capture_output=True,
                          text=True, timeout=120)
    if done.returncode:
        raise Failed(f"the README's code failed: {done.stderr[-1000:]}")
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-class", type=int, default=300, help="training JPEGs per class uploaded")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--network", default="resnet18")
    args = parser.parse_args()
    if not CIFAR.exists():
        print(f"needs {CIFAR.name} in ../shared/data")
        return 1
    folder = Path(tempfile.mkdtemp(prefix="digitslike-acceptance-"))
    app = LaunchedApp(folder, "acceptance")
    state: dict = {}
    steps = Steps(12)

    def launch() -> str:
        app.wait_up()
        app.sign_up()
        return f"launcher up at {app.url}, signed up"

    def upload() -> str:
        archive, state["held_out"] = cifar_archive(folder / "cifar.tar.gz", args.per_class, 10)
        fields = {"name": "cifar", "source": "archive", "image_type": "color", "width": "32", "height": "32",
                  "resize_mode": "squash", "val_percent": "20", "test_percent": "0", "encoding": "png"}
        with open(archive, "rb") as handle:
            job = app.call("POST", "/api/datasets", data=fields, files={"archive": ("cifar.tar.gz", handle)}).json()
        done = app.wait_job(job["id"], 600)
        state["dataset"] = job["id"]
        counts = app.events(job["id"], eventkinds.RESULT)[-1]["data"]["counts"]
        if counts["val"] <= 512 or counts["train"] <= 512:
            raise Failed(f"splits of {counts}: each must be over 512 images to take the decoding pool")
        return f"{archive.stat().st_size / 2**20:.1f} MiB uploaded, built {counts} ({done['status']})"

    def train() -> str:
        params = {"name": "acceptance", "dataset": state["dataset"], "network_source": "standard",
                  "standard_network": args.network, "epochs": args.epochs, "batch_size": 64, "lr": 0.05,
                  "seed": 11, "snapshot_interval": 1}
        job = app.call("POST", "/api/models", json=params).json()["jobs"][0]
        state["model"] = job["id"]
        job_folder = app.job_folder(job["id"])
        deadline = time.monotonic() + 900
        while not app.events(job["id"], eventkinds.SNAPSHOT):
            if time.monotonic() > deadline or app.job(job["id"])["status"] in ("done", "failed", "aborted"):
                raise Failed(f"no snapshot to kill after; the job is {app.job(job['id'])['status']}")
            time.sleep(0.5)
        pids = trainer_pids(job_folder)
        if not pids:
            raise Failed("no trainer process found to kill")
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        done = app.wait_job(job["id"], 1800)
        resumes = app.events(job["id"], eventkinds.RESUME)
        if done["attempt"] != 2 or len(resumes) != 1:
            raise Failed(f"expected one resume in attempt 2, got attempt {done['attempt']} and {len(resumes)} resume(s)")
        state["result"] = app.events(job["id"], eventkinds.RESULT)[-1]["data"]
        return (f"killed {pids} after the first snapshot; resumed at step {resumes[0]['data']['step']} "
                f"and ended: val loss {state['result']['final']['val_loss']:.6f}")

    def uninterrupted() -> str:
        clone = app.call("POST", f"/api/jobs/{state['model']}/clone").json()
        app.wait_job(clone["id"], 1800)
        theirs = app.events(clone["id"], eventkinds.RESULT)[-1]["data"]["final"]["val_loss"]
        mine = state["result"]["final"]["val_loss"]
        if abs(mine - theirs) > TOLERANCE * abs(theirs):
            raise Failed(f"resumed {mine:.6f} against uninterrupted {theirs:.6f}")
        return f"uninterrupted val loss {theirs:.6f}, resumed {mine:.6f}"

    def evaluate() -> str:
        last = f"epoch-{args.epochs}.pt"  # the snapshot whose metrics the result's final ones are
        job = app.call("POST", f"/api/models/{state['model']}/evaluate", json={"split": "val", "snapshot": last}).json()
        app.wait_job(job["id"], 600)
        report = app.call("GET", f"/api/evaluations/{job['id']}/report").json()["report"]
        trained = state["result"]["final"]["val_top1"]
        if abs(report["top1"] - trained) > 1e-6:
            raise Failed(f"evaluation top-1 {report['top1']:.4%} against the training's {trained:.4%}")
        return f"top-1 {report['top1']:.2%} on {report['count']} images, as the training job's"

    def classify() -> str:
        state["answers"] = []
        for name, image in state["held_out"]:
            answer = app.call("POST", f"/api/models/{state['model']}/classify",
                              files={"image": ("held-out.jpg", image)}).json()
            state["answers"].append((name, image, answer["top"]))
        right = sum(top[0]["class"] == name for name, _, top in state["answers"])
        return f"{len(state['answers'])} held-out images answered, {right} right"

    def export() -> str:
        job = app.call("POST", f"/api/models/{state['model']}/export", json={}).json()
        app.wait_job(job["id"], 600)
        archive = app.call("GET", f"/api/exports/{job['id']}/archive").content
        script = readme_code(archive, folder / "export")
        agreed, largest = 0, 0.0
        for _, image, top in state["answers"]:
            printed = run_readme(script, image)
            if top[0]["class"] in printed.split():
                agreed += 1
            for entry in top:
                found = re.search(rf"{re.escape(entry['class'])}\W+([0-9.]+)", printed)
                if found:
                    largest = max(largest, abs(float(found.group(1)) - entry["probability"]))
        if agreed != len(state["answers"]):
            raise Failed(f"the README's code agreed with the app on {agreed} of {len(state['answers'])} images")
        return (f"{len(archive) / 2**20:.1f} MiB archive; its README's code gives the app's top class on "
                f"{agreed} of {agreed} images (largest probability difference {largest:.1e})")

    try:
        for name, work in (("launch", launch), ("upload", upload), ("train+kill", train),
                           ("uninterrupted", uninterrupted), ("evaluate", evaluate), ("classify", classify),
                           ("export", export)):
            if not steps.run(name, work):
                break
    finally:
        app.close()
        shutil.rmtree(folder, ignore_errors=True)
    print(steps.summary())
    return steps.failures


if __name__ == "__main__":
    sys.exit(main())
