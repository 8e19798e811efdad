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
from tests.trainfiles import make_dataset, train_config
from trainer import checkpoint, events, jobfiles, lr_policy, solvers
from trainer import eventkinds as kinds
from trainer.distributed import Placement
from trainer.networks import build
from trainer.train import Run, TrainingError

ROOT = Path(__file__).resolve().parent.parent

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


def job_folder(tmp_path: Path, config: dict, name: str = "job") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**config, "job_id": 1, "devices": ["cpu0"]}))
    return folder


def start_trainer(folder: Path, processes: int = 1) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    if processes == 1:
        command = [sys.executable, "-m", "trainer.train", "config.json"]
    else:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}",
                   "-m", "trainer.train", "config.json"]
    log = open(folder / "log.txt", "wb")
    return subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)


def train(folder: Path, processes: int = 1, timeout: float = 120) -> int:
    process = start_trainer(folder, processes)
    return process.wait(timeout=timeout)


def of_kind(folder: Path, kind: str) -> list[dict]:
    return [e["data"] for e in events.read_all(folder) if e["kind"] == kind]


def log_of(folder: Path) -> str:
    return (folder / "log.txt").read_text(errors="replace")


def test_lenet_learns_the_bars_and_reports_everything(tmp_path, bars):
    folder = job_folder(tmp_path, train_config(bars, epochs=3))
    assert train(folder) == 0, log_of(folder)

    result = of_kind(folder, kinds.RESULT)[-1]
    assert result["final"]["val_top1"] >= 0.95, result
    assert result["final"]["test_top1"] >= 0.95, result
    assert result["best"]["metric"] == "val_loss"
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
    assert (folder / layers["filters"]).stat().st_size > 0
    assert {layer["name"] for layer in layers["layers"]} >= {"0", "3"} or len(layers["layers"]) == 4
    assert all(layer["grad_norm"] is not None for layer in layers["layers"])
    assert of_kind(folder, kinds.HARDWARE) or of_kind(folder, kinds.PERF)
    exported = torch.load(folder / "export" / "model.pt", weights_only=True)
    assert exported["classes"] == ["horizontal", "vertical", "diagonal", "antidiagonal"]
    assert exported["input"] == [1, 28, 28]


def test_abort_saves_a_checkpoint_and_resuming_continues_exactly(tmp_path, bars):
    config = train_config(bars, epochs=4, network={"source": "python", "text": SLOW_LENET})
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


def test_two_processes_with_gloo_match_one_process(tmp_path):
    # Epochs over the report interval with short steps: reports fall due by
    # each process's own clock in mid-epoch, at batches that differ once rank
    # 0 has spent longer writing a checkpoint after a validation.
    bars = make_dataset(tmp_path / "bigger", per_class={"train": 1500, "val": 100, "test": 50})
    common = {"epochs": 2, "scale_lr": False, "solver": "momentum", "lr": 0.01}
    single = job_folder(tmp_path, train_config(bars, batch_size=16, **common), "single")
    double = job_folder(tmp_path, train_config(bars, batch_size=8, **common), "ddp")
    assert train(single) == 0, log_of(single)
    assert train(double, processes=2) == 0, log_of(double)

    assert "2 process(es)" in log_of(double)
    assert "terminate called" not in log_of(double)
    assert len(of_kind(double, kinds.TRAIN)) > common["epochs"], "reports in mid-epoch"
    one, two = of_kind(single, kinds.VAL), of_kind(double, kinds.VAL)
    assert [v["epoch"] for v in one] == [v["epoch"] for v in two]
    for a, b in zip(one, two, strict=True):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-3)
        assert b["top1"] == pytest.approx(a["top1"], abs=0.02)
    assert of_kind(double, kinds.RESULT)[-1]["final"]["test_loss"] == pytest.approx(
        of_kind(single, kinds.RESULT)[-1]["final"]["test_loss"], rel=1e-3)


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
    lr = {"sgd": 0.3, "momentum": 0.05, "nesterov": 0.05, "adam": 0.003, "adamw": 0.003, "rmsprop": 0.001,
          "adagrad": 0.02, "adadelta": 1.0, "lars": 5.0, "lamb": 0.01}[solver]
    folder = run_here(tmp_path, bars, solver=solver, lr=lr, epochs=2, lr_policy={"name": "fixed"})
    losses = [t["loss"] for t in of_kind(folder, kinds.TRAIN)]
    assert losses[-1] < losses[0] * 0.8, (solver, losses)


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


def test_running_out_of_gpu_memory_suggests_a_smaller_batch():
    from trainer.train import _describe_failure

    message = _describe_failure(torch.OutOfMemoryError("CUDA out of memory"), {"batch_size": 512})
    assert "batch size of 512" in message and "try a smaller batch size" in message
