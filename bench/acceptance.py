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
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.redisserver import free_port  # noqa: E402

CIFAR = ROOT.parent / "shared" / "data" / "cifar10-jpg.tar.gz"
PASSWORD = "acceptance-password-1"
TOLERANCE = 1e-5  # relative, on the final validation loss of the resumed and the uninterrupted run


class Failed(Exception):
    pass


class App:
    """The launcher's stack and a signed-in HTTP client."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.url = f"http://127.0.0.1:{free_port()}"
        env = {**os.environ, "DATA_DIR": str(folder / "data"), "PORT": self.url.rsplit(":", 1)[1],
               "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
               "PYTHONUNBUFFERED": "1"}
        self.log = open(folder / "launcher.log", "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "digitslike.launch"], cwd=ROOT, env=env,
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.http = httpx.Client(base_url=self.url, timeout=120)

    def wait_up(self, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise Failed(f"the launcher exited: {(self.folder / 'launcher.log').read_text()[-2000:]}")
            try:
                if self.http.get("/login/").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise Failed("the app did not answer")

    def sign_up(self) -> None:
        self.http.get("/signup/")
        answer = self.http.post("/signup/", data={
            "username": "acceptance", "email": "acceptance@example.org", "password1": PASSWORD, "password2": PASSWORD,
            "csrfmiddlewaretoken": self.http.cookies["csrftoken"]}, follow_redirects=True)
        if answer.status_code != 200 or self.http.get("/api/me").status_code != 200:
            raise Failed(f"sign-up answered {answer.status_code}")

    def call(self, method: str, path: str, expect: tuple[int, ...] = (200, 201, 202), **options) -> httpx.Response:
        headers = {"X-CSRFToken": self.http.cookies.get("csrftoken", "")}
        answer = self.http.request(method, path, headers=headers, **options)
        if answer.status_code not in expect:
            raise Failed(f"{method} {path} answered {answer.status_code}: {answer.text[:500]}")
        return answer

    def job(self, job_id: int) -> dict:
        return self.call("GET", f"/api/jobs/{job_id}").json()

    def wait_job(self, job_id: int, seconds: float, until: tuple[str, ...] = ("done",)) -> dict:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            job = self.job(job_id)
            if job["status"] in until:
                return job
            if job["status"] in ("failed", "aborted"):
                raise Failed(f"job {job_id} {job['status']}: {job['error'] or job['history'][-1]['message']}")
            time.sleep(1)
        raise Failed(f"job {job_id} is still {self.job(job_id)['status']} after {seconds:.0f} s")

    def events(self, job_id: int, kind: str) -> list[dict]:
        path = self.folder / "data" / "jobs" / str(job_id) / "events.jsonl"
        if not path.exists():
            return []
        return [event for event in map(json.loads, path.read_text().splitlines()) if event["kind"] == kind]

    def close(self) -> None:
        self.http.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        self.log.close()


def cifar_archive(target: Path, per_class: int, held_out: int) -> tuple[Path, list[tuple[str, bytes]]]:
    """A tar.gz of ``per_class`` training JPEGs of each class, in class
    folders under one top folder; and ``held_out`` test JPEGs with their class."""
    taken: dict[str, int] = {}
    test: list[tuple[str, bytes]] = []
    with tarfile.open(CIFAR) as source, tarfile.open(target, "w:gz") as out:
        for member in source:
            parts = member.name.split("/")
            if not member.isfile() or len(parts) != 4:
                continue
            _, split, name, _ = parts
            if split == "train" and taken.get(name, 0) < per_class:
                taken[name] = taken.get(name, 0) + 1
                data = source.extractfile(member).read()
                info = tarfile.TarInfo(f"cifar/{name}/{parts[3]}")
                info.size = len(data)
                out.addfile(info, io.BytesIO(data))
            elif split == "test" and len(test) < held_out and sum(1 for c, _ in test if c == name) < 1:
                test.append((name, source.extractfile(member).read()))
            if len(taken) == 10 and min(taken.values()) >= per_class and len(test) >= held_out:
                break
    return target, test


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
    app = App(folder)
    state: dict = {}
    failures = 0

    def step(name: str, work: Callable[[], str]) -> bool:
        nonlocal failures
        started = time.monotonic()
        try:
            verdict, ok = work(), True
        except (Failed, httpx.HTTPError, OSError, KeyError, ValueError, subprocess.TimeoutExpired) as exc:
            verdict, ok = f"FAILED: {exc}", False
            failures += 1
        print(f"{name:12s} {time.monotonic() - started:7.1f} s  {'ok' if ok else '--'}  {verdict}", flush=True)
        return ok

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
        counts = app.events(job["id"], "result")[-1]["data"]["counts"]
        if counts["val"] <= 512 or counts["train"] <= 512:
            raise Failed(f"splits of {counts}: each must be over 512 images to take the decoding pool")
        return f"{archive.stat().st_size / 2**20:.1f} MiB uploaded, built {counts} ({done['status']})"

    def train() -> str:
        params = {"name": "acceptance", "dataset": state["dataset"], "network_source": "standard",
                  "standard_network": args.network, "epochs": args.epochs, "batch_size": 64, "lr": 0.05,
                  "seed": 11, "snapshot_interval": 1}
        job = app.call("POST", "/api/models", json=params).json()["jobs"][0]
        state["model"] = job["id"]
        job_folder = folder / "data" / "jobs" / str(job["id"])
        deadline = time.monotonic() + 900
        while not app.events(job["id"], "snapshot"):
            if time.monotonic() > deadline or app.job(job["id"])["status"] in ("done", "failed", "aborted"):
                raise Failed(f"no snapshot to kill after; the job is {app.job(job['id'])['status']}")
            time.sleep(0.5)
        pids = trainer_pids(job_folder)
        if not pids:
            raise Failed("no trainer process found to kill")
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        done = app.wait_job(job["id"], 1800)
        resumes = app.events(job["id"], "resume")
        if done["attempt"] != 2 or len(resumes) != 1:
            raise Failed(f"expected one resume in attempt 2, got attempt {done['attempt']} and {len(resumes)} resume(s)")
        state["result"] = app.events(job["id"], "result")[-1]["data"]
        return (f"killed {pids} after the first snapshot; resumed at step {resumes[0]['data']['step']} "
                f"and ended: val loss {state['result']['final']['val_loss']:.6f}")

    def uninterrupted() -> str:
        clone = app.call("POST", f"/api/jobs/{state['model']}/clone").json()
        app.wait_job(clone["id"], 1800)
        theirs = app.events(clone["id"], "result")[-1]["data"]["final"]["val_loss"]
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
            if not step(name, work):
                break
    finally:
        app.close()
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{'acceptance':12s} {'passed' if not failures else f'{failures} step(s) failed'}")
    return failures


if __name__ == "__main__":
    sys.exit(main())
