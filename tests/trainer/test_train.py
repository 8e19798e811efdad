"""The trainer on its own, as the worker runs it: ``python -m trainer.train
config.json`` in a job folder (and under torchrun for two processes), plus
quick in-process runs of the same ``Run`` for the option matrix."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.processes import wait_for
from tests.redisserver import free_port
from tests.trainfiles import make_dataset, train_config
from trainer import checkpoint, eventlog, jobfiles, lr_policy, solvers
from trainer import eventkinds as kinds
from trainer.data import CHUNK_IMAGES, SplitData, StreamingSplit
from trainer.distributed import Placement
from trainer.networks import build
from trainer.train import DATA_BUDGET_VARIABLE, WARMUP_STEPS, Run, TrainingError

ROOT = Path(__file__).resolve().parents[2]

# A user's Python network that takes at least 15 ms a batch, so a test can
# interrupt it mid-run; the arithmetic is LeNet's.
SLOW_LENET = """
import time

class Slow(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        time.sleep(0.015)
        return self.inner(x)

def build(channels, classes, height, width):
    from trainer.networks import build as standard
    return Slow(standard({"source": "standard", "name": "lenet"}, channels, classes, height, width))
"""


@pytest.fixture(scope="module")
def bars(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("bars") / "dataset")


def job_folder(tmp_path: Path, config: dict, name: str = "job", devices: tuple[str, ...] = ("cpu0",)) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / jobfiles.CONFIG).write_text(json.dumps({**config, "job_id": 1, "devices": list(devices)}))
    return folder


def start_trainer(folder: Path, processes: int = 1, **env_overrides: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", **env_overrides}
    if processes == 1:
        command = [sys.executable, "-m", "trainer.train", jobfiles.CONFIG]
    else:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}",
                   "-m", "trainer.train", jobfiles.CONFIG]
    log = open(folder / "log.txt", "wb")
    return subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)


def train(folder: Path, processes: int = 1, timeout: float = 120, **env_overrides: str) -> int:
    process = start_trainer(folder, processes, **env_overrides)
    return process.wait(timeout=timeout)


def rank_pid(launcher: subprocess.Popen, rank: int) -> int:
    """The process id of torchrun's child of rank ``rank``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            environment = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        if parent == launcher.pid and f"RANK={rank}".encode() in environment:
            return int(entry.name)
    raise AssertionError(f"torchrun {launcher.pid} has no process of rank {rank}")


def of_kind(folder: Path, kind: str) -> list[dict]:
    return [e["data"] for e in eventlog.read_all(folder) if e["kind"] == kind]


def log_of(folder: Path) -> str:
    return (folder / "log.txt").read_text(errors="replace")


def test_lenet_learns_the_bars_and_reports_everything(tmp_path, bars):
    folder = job_folder(tmp_path, train_config(bars, epochs=3))
    assert train(folder) == 0, log_of(folder)

    result = of_kind(folder, kinds.RESULT)[-1]
    assert result["final"]["val_top1"] >= 0.95, result
    assert result["final"]["test_top1"] >= 0.95, result
    assert result["best"]["metric"] == "val_loss"
    assert result["per_class"] == {}, "classification names no class metrics"
    network = of_kind(folder, kinds.NETWORK)[0]
    assert network["summary"]["params"] == 431_080 - 6 * 501  # 4 classes instead of 10
    assert network["input"] == [1, 28, 28]
    assert [round(v["epoch"], 6) for v in of_kind(folder, kinds.VAL)] == [1.0, 2.0, 3.0]
    steps = [t["step"] for t in of_kind(folder, kinds.TRAIN)]
    assert steps == sorted(set(steps)) and steps[-1] == 3 * (480 // 32)
    assert of_kind(folder, kinds.PROGRESS)[-1]["progress"] == 1.0
    snapshots = of_kind(folder, kinds.SNAPSHOT)
    assert [s["file"] for s in snapshots] == [f"checkpoints/epoch-{e}.pt" for e in (1, 2, 3)]
    assert any(s["best"] for s in snapshots)
    layers = of_kind(folder, kinds.LAYERS)[-1]
    assert (folder / layers["filters"]).stat().st_size > 0 and (folder / layers["filters_together"]).stat().st_size > 0
    assert {layer["name"] for layer in layers["layers"]} >= {"0", "3"} or len(layers["layers"]) == 4
    assert all(layer["grad_norm"] is not None for layer in layers["layers"])
    assert of_kind(folder, kinds.HARDWARE) or of_kind(folder, kinds.PERF)
    exported = torch.load(folder / "export" / "model.pt", weights_only=True)
    assert exported["classes"] == ["horizontal", "vertical", "diagonal", "antidiagonal"]
    assert exported["input"] == [1, 28, 28]


@pytest.mark.parametrize("averaging", [None, {"kind": "ema", "decay": 0.9, "every": 3}], ids=["plain", "ema"])
def test_abort_saves_a_checkpoint_and_resuming_continues_exactly(tmp_path, bars, averaging):
    config = train_config(bars, epochs=4, network={"source": "python", "text": SLOW_LENET}, averaging=averaging)
    whole = job_folder(tmp_path, config, "whole")
    interrupted = job_folder(tmp_path, config, "interrupted")
    uninterrupted = start_trainer(whole)

    process = start_trainer(interrupted)
    wait_for(lambda: any(t["epoch"] > 1.3 for t in of_kind(interrupted, kinds.TRAIN)), timeout=60,
             what="training to pass epoch 1.3")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0, log_of(interrupted)
    assert "checkpoint saved for resuming" in log_of(interrupted)
    assert not of_kind(interrupted, kinds.RESULT)
    stopped_at = of_kind(interrupted, kinds.TRAIN)[-1]["step"]
    before = checkpoint.load(interrupted / jobfiles.LAST_CHECKPOINT)["progress"]
    assert before["train_seconds"] > 0 and before["warmup_seconds"] > 0

    assert train(interrupted) == 0, log_of(interrupted)
    assert uninterrupted.wait(timeout=120) == 0, log_of(whole)
    resumed = of_kind(interrupted, kinds.RESUME)
    assert len(resumed) == 1 and resumed[0]["step"] >= stopped_at

    steps = [t["step"] for t in of_kind(interrupted, kinds.TRAIN)]
    assert steps == sorted(set(steps)), "no step is reported twice"
    assert [v["epoch"] for v in of_kind(interrupted, kinds.VAL)] == [v["epoch"] for v in of_kind(whole, kinds.VAL)]
    for mine, theirs in zip(of_kind(interrupted, kinds.VAL), of_kind(whole, kinds.VAL), strict=True):
        assert mine["loss"] == pytest.approx(theirs["loss"], rel=1e-5), "the same curve as without the abort"
    assert of_kind(interrupted, kinds.RESULT)[-1]["final"] == pytest.approx(of_kind(whole, kinds.RESULT)[-1]["final"], rel=1e-5)
    result = of_kind(interrupted, kinds.RESULT)[-1]
    assert result["train_seconds"] > before["train_seconds"], "the training time counts both attempts"
    assert result["warmup_seconds"] > before["warmup_seconds"], "each attempt warms up, and both are counted"


# How a split is read switches at two thresholds: an encoded split of more
# than ``CHUNK_IMAGES`` (512) images is decoded by a pool of forked processes
# (at most 512, in this process), and a split over the data budget streams
# through DataLoader processes. Each side of each, killed as the
# out-of-memory killer kills and resumed, ends as the uninterrupted run.
# A hang detector, not a speed check: trainings of seconds alone may take
# minutes beside the suite's other processes on a 2-core machine.
TRAINING_HANG_SECONDS = 360


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("train_per_class, budget", [
    (128, ""),  # 512 images: decoded here
    (129, ""),  # 516: decoded by the pool
    (129, "1000"),  # streamed through the loader's processes
], ids=["512-decoded-here", "516-decoded-by-a-pool", "516-streamed"])
def test_a_killed_training_of_an_encoded_split_resumes_to_the_uninterrupted_end(tmp_path, train_per_class, budget):
    dataset = make_dataset(tmp_path / "png", {"train": train_per_class, "val": 20, "test": 0}, encoding="png")
    assert CHUNK_IMAGES == 512 and train_per_class * 4 - CHUNK_IMAGES in (0, 4)
    config = train_config(dataset, epochs=3, batch_size=16, network={"source": "python", "text": SLOW_LENET})
    whole, interrupted = job_folder(tmp_path, config, "whole"), job_folder(tmp_path, config, "interrupted")
    environment = {DATA_BUDGET_VARIABLE: budget} if budget else {}
    uninterrupted = start_trainer(whole, **environment)
    process = start_trainer(interrupted, **environment)
    wait_for(lambda: of_kind(interrupted, kinds.SNAPSHOT), timeout=TRAINING_HANG_SECONDS,
             what=lambda: f"the first snapshot; the log:\n{log_of(interrupted)}")
    process.kill()
    process.wait(timeout=10)
    assert not of_kind(interrupted, kinds.RESULT), "killed before the end"

    assert train(interrupted, timeout=TRAINING_HANG_SECONDS, **environment) == 0, log_of(interrupted)
    assert uninterrupted.wait(timeout=TRAINING_HANG_SECONDS) == 0, log_of(whole)
    assert len(of_kind(interrupted, kinds.RESUME)) == 1
    final = of_kind(interrupted, kinds.RESULT)[-1]["final"]
    assert final["val_loss"] == pytest.approx(of_kind(whole, kinds.RESULT)[-1]["final"]["val_loss"], rel=1e-5)


def start_node(folder: Path, rank: int, nodes: int, port: int, **rendezvous: str) -> subprocess.Popen:
    """One node of a job over ``nodes`` machines, as torchrun runs it on each
    (static rendezvous at node 0's address, here loopback), with one process
    and a log of its own, in the job folder the machines share."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    conf = ",".join(f"{key}={value}" for key, value in rendezvous.items())
    command = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nodes}", f"--node-rank={rank}",
               "--nproc-per-node=1", "--master-addr=127.0.0.1", f"--master-port={port}",
               *([f"--rdzv-conf={conf}"] if conf else []), "-m", "trainer.train", jobfiles.CONFIG]
    log = open(folder / f"node{rank}.txt", "wb")
    return subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)


def train_on_nodes(folder: Path, nodes: int, timeout: float = 180) -> list[int]:
    port = free_port()
    launched = [start_node(folder, rank, nodes, port) for rank in range(nodes)]
    return [process.wait(timeout=timeout) for process in launched]


def node_logs(folder: Path, nodes: int) -> str:
    return "\n".join((folder / f"node{rank}.txt").read_text(errors="replace") for rank in range(nodes))


# The recipe's options that could part the processes: the average (kept by
# each), the flip by image number (the same images on either side), the views.
RECIPE = {"averaging": {"kind": "lookahead", "decay": 0.9, "every": 5}, "flip": "alternating", "tta": "mirror_translate"}
ONE_NODE, TWO_NODES = "two processes on one node", "one process on each of two nodes"


@pytest.fixture(scope="module")
def one_process_runs(tmp_path_factory):
    """The one-process training each set of options is compared with, made
    once for the module's tests (the one- and two-node layouts share theirs),
    on bars big enough that epochs outlast the report interval with short
    steps: reports then fall due by each process's own clock in mid-epoch,
    at batches that differ once rank 0 has spent longer writing a checkpoint
    after a validation. ``runs(options)``: the common config and the folder."""
    root = tmp_path_factory.mktemp("gloo")
    bars = make_dataset(root / "bigger", per_class={"train": 1500, "val": 100, "test": 50})
    made: dict[str, tuple[dict, Path]] = {}

    def runs(options: dict) -> tuple[dict, Path]:
        key = json.dumps(options, sort_keys=True)
        if key not in made:
            common = train_config(bars, epochs=2, scale_lr=False, solver="momentum", lr=0.01, **options)
            single = job_folder(root, {**common, "batch_size": 16}, f"single{len(made)}")
            assert train(single, timeout=TRAINING_HANG_SECONDS) == 0, log_of(single)
            made[key] = common, single
        return made[key]
    return runs


# Five trainings of 15 s each alone: beside the suite's other processes each
# may take several times that, and the per-training and per-test limits
# guard against a hang, not a slow machine.
@pytest.mark.timeout(1200)
@pytest.mark.parametrize(("layout", "options"), [(ONE_NODE, {}), (TWO_NODES, {}), (ONE_NODE, RECIPE)],
                         ids=["one node", "two nodes", "one node, airbench recipe"])
def test_two_processes_with_gloo_match_one_process(tmp_path, one_process_runs, layout, options):
    common, single = one_process_runs(options)
    double = job_folder(tmp_path, {**common, "batch_size": 8}, "ddp")
    if layout == "two processes on one node":
        assert train(double, processes=2, timeout=TRAINING_HANG_SECONDS) == 0, log_of(double)
        logged = log_of(double)
    else:
        codes = train_on_nodes(double, nodes=2, timeout=TRAINING_HANG_SECONDS)
        logged = node_logs(double, nodes=2)
        assert codes == [0, 0], logged

    assert "2 process(es)" in logged
    assert "terminate called" not in logged
    assert len(of_kind(double, kinds.TRAIN)) > common["epochs"], "reports in mid-epoch"
    one, two = of_kind(single, kinds.VAL), of_kind(double, kinds.VAL)
    assert [v["epoch"] for v in one] == [v["epoch"] for v in two]
    for a, b in zip(one, two, strict=True):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-3)
        assert b["top1"] == pytest.approx(a["top1"], abs=0.02)
    assert of_kind(double, kinds.RESULT)[-1]["final"]["test_loss"] == pytest.approx(
        of_kind(single, kinds.RESULT)[-1]["final"]["test_loss"], rel=1e-3)


@pytest.mark.slow
def test_a_node_alone_gives_up_on_the_rendezvous_after_its_timeout(tmp_path, bars):
    folder = job_folder(tmp_path, train_config(bars, epochs=1))
    lonely = start_node(folder, rank=0, nodes=2, port=free_port(), timeout="3")
    assert lonely.wait(timeout=60) != 0
    assert "1/2 clients joined" in node_logs(folder, nodes=1)
    assert not of_kind(folder, kinds.TRAIN), "nothing trained without its other node"


def test_a_diverging_loss_fails_with_advice(tmp_path, bars):
    folder = job_folder(tmp_path, train_config(bars, solver="sgd", lr=1e12, epochs=2))
    assert train(folder) == 1
    message = of_kind(folder, kinds.ERROR)[-1]["message"]
    assert "try a lower learning rate" in message, message


def test_a_network_that_does_not_build_fails_with_the_users_line(tmp_path, bars):
    code = "def build(channels, classes, height, width):\n    raise ValueError('no such layer')\n"
    folder = job_folder(tmp_path, train_config(bars, network={"source": "python", "text": code}))
    assert train(folder) == 1
    message = of_kind(folder, kinds.ERROR)[-1]["message"]
    assert "no such layer" in message and "line 2" in message, message


def test_a_layer_list_that_does_not_fit_the_images_says_so(tmp_path, bars):
    layers = "- conv: {out: 8, kernel: 40}\n- flatten: {}\n- linear: {out: classes}\n"
    folder = job_folder(tmp_path, train_config(bars, network={"source": "layers", "text": layers}))
    assert train(folder) == 1
    assert "does not fit" in of_kind(folder, kinds.ERROR)[-1]["message"]


# In-process runs: the same Run the subprocess uses, without the start-up.

CPU = Placement(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))


def run_here(tmp_path: Path, bars: Path, **overrides) -> Path:
    config = {**train_config(bars, **overrides), "job_id": 1, "devices": ["cpu0"]}
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    Run(config, folder, CPU).train()
    return folder


@pytest.mark.parametrize("solver", [name for name, _ in solvers.SOLVERS])
def test_every_solver_lowers_the_loss(tmp_path, bars, solver):
    lr = {"sgd": 0.3, "momentum": 0.05, "nesterov": 0.05, "adam": 0.003, "adamw": 0.003, "rmsprop": 0.0003,
          "adagrad": 0.02, "adadelta": 1.0, "lars": 5.0, "lamb": 0.01}[solver]
    folder = run_here(tmp_path, bars, solver=solver, lr=lr, epochs=2, lr_policy={"name": "fixed"})
    first = of_kind(folder, kinds.TRAIN)[0]["loss"]
    last_epoch = [t["loss"] for t in of_kind(folder, kinds.TRAIN) if t["epoch"] > 1]
    # A train event averages the steps of a half-second window, so on a slow machine the last one can
    # be a single noisy step; the last epoch's mean and the validation loss over the split are not.
    assert sum(last_epoch) / len(last_epoch) < first * 0.8, (solver, first, last_epoch)
    assert of_kind(folder, kinds.VAL)[-1]["loss"] < first * 0.8, (solver, first, of_kind(folder, kinds.VAL))


@pytest.mark.parametrize("policy", [name for name, _, _ in lr_policy.POLICIES])
def test_the_learning_rate_follows_the_policy(tmp_path, bars, policy):
    chosen = {"name": policy, **lr_policy.DEFAULTS.get(policy, {})}
    folder = run_here(tmp_path, bars, epochs=1, lr=0.01, lr_policy=chosen)
    total = 480 // 32
    for event in of_kind(folder, kinds.TRAIN):
        assert event["lr"] == pytest.approx(lr_policy.lr_at(chosen, 0.01, event["step"], total), rel=1e-6)


def test_batch_schedule_accumulation_and_early_stopping(tmp_path, bars):
    folder = run_here(tmp_path, bars, epochs=4, batch_schedule=[[2, 64]], batch_accumulation=2, lr=0.0,
                      lr_policy={"name": "fixed"}, early_stopping={"metric": "val_loss", "patience": 1})
    sizes = {round(t["epoch"]): t["batch_size"] for t in of_kind(folder, kinds.TRAIN)}
    assert sizes[1] == 32
    result = of_kind(folder, kinds.RESULT)[-1]
    assert result["stopped_early"] is True, "with a zero learning rate the loss never improves"
    assert result["best"]["epoch"] == 1.0
    assert len(of_kind(folder, kinds.VAL)) == 2


def test_only_the_last_snapshots_are_kept_and_only_the_resuming_checkpoint_holds_the_optimiser(tmp_path, bars):
    folder = run_here(tmp_path, bars, epochs=3, keep_snapshots=1)
    checkpoints = folder / jobfiles.CHECKPOINTS
    assert sorted(p.name for p in checkpoints.iterdir()) == ["best.pt", "epoch-3.pt", "last.pt"]
    assert [s["removed"] for s in of_kind(folder, kinds.SNAPSHOT)] == [[], ["checkpoints/epoch-1.pt"],
                                                                      ["checkpoints/epoch-2.pt"]]
    for name in ("epoch-3.pt", "best.pt"):
        state = checkpoint.load(checkpoints / name)
        assert "model" in state and "optimizer" not in state, name
    assert "optimizer" in checkpoint.load(checkpoints / "last.pt")


def test_fine_tuning_reinitialises_a_classifier_of_another_size(tmp_path, bars):
    three_classes = build({"source": "standard", "name": "lenet"}, 1, 3, 28, 28)
    checkpoint.save(tmp_path / "earlier.pt", {"model": three_classes.state_dict()})
    pretrained = {"job": 1, "path": str(tmp_path / "earlier.pt"), "mode": "finetune"}
    folder = run_here(tmp_path, bars, epochs=1, pretrained=pretrained)
    assert of_kind(folder, kinds.RESULT)[-1]["final"]["val_top1"] > 0.5

    config = {**train_config(bars, pretrained={**pretrained, "mode": "continue"}), "job_id": 2, "devices": ["cpu0"]}
    with pytest.raises(TrainingError, match="does not match"):
        Run(config, tmp_path / "other", CPU)


def test_a_profile_request_records_the_top_operators(tmp_path, bars):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / jobfiles.PROFILE_REQUEST).touch()
    run_here(tmp_path, bars, epochs=2)
    profile = of_kind(folder, kinds.PROFILE)[-1]
    assert profile["steps"] == 5
    assert profile["top"] and {"name", "calls", "self_cpu_ms"} <= set(profile["top"][0])
    assert (folder / profile["file"]).stat().st_size > 0
    assert not (folder / jobfiles.PROFILE_REQUEST).exists()


def test_running_out_of_gpu_memory_suggests_a_smaller_batch(tmp_path):
    from trainer.train import _describe_failure

    message = _describe_failure(torch.OutOfMemoryError("CUDA out of memory"), {"batch_size": 512}, tmp_path)
    assert "batch size of 512" in message and "try a smaller batch size" in message


def test_warm_up_is_timed_apart_from_training(tmp_path, bars):
    folder = run_here(tmp_path, bars, epochs=1)
    result = of_kind(folder, kinds.RESULT)[-1]
    assert result["warmup_seconds"] > 0
    timed_images = (480 // 32 - WARMUP_STEPS) * 32
    assert result["images_per_s"] * result["train_seconds"] == pytest.approx(timed_images), \
        "the rate counts the images after the warm-up over the time after it"
    assert all(p["warmup_seconds"] == result["warmup_seconds"] for p in of_kind(folder, kinds.PERF))


def test_one_data_budget_covers_all_splits_and_the_rest_streams(tmp_path, bars, monkeypatch):
    train_bytes = 480 * 28 * 28
    monkeypatch.setenv(DATA_BUDGET_VARIABLE, str(train_bytes + 1000))  # the training split, and not the others
    config = {**train_config(bars, epochs=1), "job_id": 1, "devices": ["cpu0"]}
    folder = tmp_path / "run"
    folder.mkdir()
    run = Run(config, folder, CPU)
    assert isinstance(run.splits["train"], SplitData)
    assert isinstance(run.splits["val"], StreamingSplit) and isinstance(run.splits["test"], StreamingSplit)
    run.train()
    assert of_kind(folder, kinds.RESULT)[-1]["final"]["val_top1"] > 0.5


def test_too_little_memory_for_any_split_still_trains_streaming(tmp_path, bars, monkeypatch):
    monkeypatch.setenv(DATA_BUDGET_VARIABLE, "1000")
    folder = run_here(tmp_path, bars, epochs=2)
    assert of_kind(folder, kinds.RESULT)[-1]["final"]["val_top1"] > 0.5


def test_a_compiled_network_trains_on_the_cpu(tmp_path, bars):
    folder = run_here(tmp_path, bars, epochs=2, compile=True)
    result = of_kind(folder, kinds.RESULT)[-1]
    assert result["final"]["val_top1"] > 0.9, result


# GPU paths that the CPU can exercise.

def test_a_job_that_leased_a_gpu_it_cannot_use_fails_and_never_trains_on_the_cpu(tmp_path, bars):
    folder = job_folder(tmp_path, train_config(bars), devices=("gpu0",))
    assert train(folder, CUDA_VISIBLE_DEVICES="") == 1  # no GPU visible, whatever the machine has
    message = of_kind(folder, kinds.ERROR)[-1]["message"]
    assert "The job leased gpu0 but cannot use it" in message, message
    assert f"CUDA {torch.version.cuda}" in message and "NVIDIA driver" in message, message
    assert not of_kind(folder, kinds.TRAIN)


# Several processes: every decision to stop is taken together.

NAN_IN_PROCESS_1 = """
import torch.distributed as dist

class Poison(torch.autograd.Function):
    # NaN out, zero gradient back: only process 1's loss goes bad, the model stays finite.
    @staticmethod
    def forward(ctx, x):
        return x * float("nan")

    @staticmethod
    def backward(ctx, grad):
        return torch.zeros_like(grad)

class Diverging(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.calls = 0

    def forward(self, x):
        out = self.inner(x)
        if self.training:
            self.calls += 1
            if dist.get_rank() == 1 and self.calls > 12:
                return Poison.apply(out)
        return out

def build(channels, classes, height, width):
    from trainer.networks import build as standard
    return Diverging(standard({"source": "standard", "name": "lenet"}, channels, classes, height, width))
"""

FAILS_IN_PROCESS_1 = """
import torch.distributed as dist

class Failing(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.calls = 0

    def forward(self, x):
        if self.training:
            self.calls += 1
            if dist.get_rank() == 1 and self.calls > 12:
                raise ValueError("process 1 could not go on")
        return self.inner(x)

def build(channels, classes, height, width):
    from trainer.networks import build as standard
    return Failing(standard({"source": "standard", "name": "lenet"}, channels, classes, height, width))
"""

# Saves its BatchNorm's running mean, as each process has it, at the first
# evaluation after training.
BATCHNORM_RECORDING = """
import os
import torch.distributed as dist

class Recording(nn.Module):
    def __init__(self, channels, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(channels, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, classes))
        self.trained = False

    def forward(self, x):
        if self.training:
            self.trained = True
        elif self.trained and not os.path.exists(f"bn-{dist.get_rank()}.pt"):
            torch.save(self.body[1].running_mean.clone(), f"bn-{dist.get_rank()}.pt")
        return self.body(x)

def build(channels, classes, height, width):
    return Recording(channels, classes)
"""


def test_an_abort_that_reaches_one_process_stops_both_at_the_same_step(tmp_path, bars):
    # 7 batches an epoch per process: stops are agreed at epochs' starts as
    # well as every 10 optimiser steps.
    config = train_config(bars, epochs=40, batch_size=32, network={"source": "python", "text": SLOW_LENET})
    folder = job_folder(tmp_path, config)
    launcher = start_trainer(folder, processes=2)
    wait_for(lambda: any(t["epoch"] > 1.5 for t in of_kind(folder, kinds.TRAIN)), timeout=120,
             what="training to pass epoch 1.5")
    os.kill(rank_pid(launcher, 1), signal.SIGTERM)
    assert launcher.wait(timeout=120) == 0, log_of(folder)
    assert "checkpoint saved for resuming" in log_of(folder)
    assert not of_kind(folder, kinds.RESULT) and not of_kind(folder, kinds.ERROR)
    assert checkpoint.load(folder / jobfiles.LAST_CHECKPOINT)["progress"]["epoch"] < 40


def test_a_loss_that_diverges_in_one_process_stops_both_with_the_message(tmp_path, bars):
    config = train_config(bars, epochs=3, batch_size=16, network={"source": "python", "text": NAN_IN_PROCESS_1})
    folder = job_folder(tmp_path, config)
    assert train(folder, processes=2) == 1, log_of(folder)
    message = of_kind(folder, kinds.ERROR)[-1]["message"]
    assert "The training loss became nan in process 1" in message and "try a lower learning rate" in message, message
    assert len(of_kind(folder, kinds.ERROR)) == 1
    assert not of_kind(folder, kinds.RESULT)


def test_an_error_in_one_process_is_the_jobs_error(tmp_path, bars):
    config = train_config(bars, epochs=3, batch_size=16, network={"source": "python", "text": FAILS_IN_PROCESS_1})
    folder = job_folder(tmp_path, config)
    assert train(folder, processes=2) == 1, log_of(folder)
    errors = of_kind(folder, kinds.ERROR)
    assert len(errors) == 1, errors
    assert errors[0]["message"].startswith("Process 1 of 2: ") and "process 1 could not go on" in errors[0]["message"]


def test_both_processes_validate_with_the_same_batchnorm_statistics(tmp_path, bars):
    config = train_config(bars, epochs=1, batch_size=16, network={"source": "python", "text": BATCHNORM_RECORDING})
    folder = job_folder(tmp_path, config)
    assert train(folder, processes=2) == 0, log_of(folder)
    first, second = torch.load(folder / "bn-0.pt"), torch.load(folder / "bn-1.pt")
    assert torch.equal(first, second), (first, second)


# LeNet that saves its first layer's gradient as this process has it at the
# first forward that finds one: the second batch of an accumulation, whose
# first batch's gradient DDP's no_sync keeps local (so it differs by process).
GRADIENT_RECORDING = """
import os
import torch.distributed as dist

class Recording(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    @torch.compiler.disable
    def record(self):
        grad = next(self.inner.parameters()).grad
        if grad is not None and not os.path.exists(f"grad-{dist.get_rank()}.pt"):
            torch.save(grad.clone(), f"grad-{dist.get_rank()}.pt")

    def forward(self, x):
        if self.training:
            self.record()
        return self.inner(x)

def build(channels, classes, height, width):
    from trainer.networks import build as standard
    return Recording(standard({"source": "standard", "name": "lenet"}, channels, classes, height, width))
"""


def test_a_compiled_network_accumulates_gradients_under_ddp_as_an_eager_one(tmp_path, bars):
    common = {"epochs": 1, "batch_size": 8, "batch_accumulation": 2, "scale_lr": False, "solver": "momentum",
              "lr": 0.01, "network": {"source": "python", "text": GRADIENT_RECORDING}}
    eager = job_folder(tmp_path, train_config(bars, **common), "eager")
    compiled = job_folder(tmp_path, train_config(bars, compile=True, **common), "compiled")
    assert train(eager, processes=2) == 0, log_of(eager)
    assert train(compiled, processes=2, timeout=600) == 0, log_of(compiled)
    loss = of_kind(eager, kinds.RESULT)[-1]["final"]["val_loss"]
    assert of_kind(compiled, kinds.RESULT)[-1]["final"]["val_loss"] == pytest.approx(loss, rel=1e-3)
    for folder in (eager, compiled):
        first, second = torch.load(folder / "grad-0.pt"), torch.load(folder / "grad-1.pt")
        assert not torch.equal(first, second), f"{folder.name}: no all-reduce between accumulated batches"


def test_a_long_validation_says_how_far_it_is(tmp_path, bars, monkeypatch, capsys):
    """Validation prints its progress every ``STILL_WORKING_SECONDS`` (lowered
    to 0 here), so the worker hears a job that validates for minutes."""
    monkeypatch.setattr("trainer.train.STILL_WORKING_SECONDS", 0.0)
    run_here(tmp_path, bars, epochs=1, batch_size=60)
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("val: batch")]
    assert said == ["val: batch 1 of 2", "val: batch 2 of 2"]
