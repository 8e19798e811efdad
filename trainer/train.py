"""Training job: ``python -m trainer.train config.json``, or under ``torchrun``
with one process per device (DistributedDataParallel: NCCL on GPUs, gloo on
the CPU).

The shape is torchvision's reference script: ``main(config)`` sets up,
``train_one_epoch`` and ``evaluate`` do the work, and one checkpoint dict
holds everything needed to resume. Precision and device are decided once,
outside the loop (an autocast context and a scaler that may be disabled), so
the CPU runs the same step the GPU does. Metrics are summed on the device and
read at reporting points only; each such read is marked as a host-device sync.

A job folder that holds ``checkpoints/last.pt`` resumes from it: after an
abort (the SIGTERM handler saves it at the next step boundary) or after the
worker was lost (the last snapshot's copy).

With several processes every decision that leads to a collective is taken
together: whether to stop (an abort reaches the processes at different
moments) is all-reduced every few optimiser steps and at each epoch's start,
with each process's training loss, so that a loss that is no longer finite on
any of them fails all of them at the same step. A process that fails on its
own writes its message to the log; the first message of the run is the job's
error.

Timing: the first ``WARMUP_STEPS`` batches (CUDA's start, cuDNN's
autotuning, compilation) are timed apart as ``warmup_seconds``; the images/s
and ``train_seconds`` of the result and the perf events cover the batches
after them. An interval ends after a synchronisation with the device, so it
holds the time its last kernel took.

Over 400 lines on purpose: the set-up, the loop and its reporting are one
``Run`` that reads top to bottom; the pieces that stand alone (data,
augmentation, checkpoints, telemetry, the shared names and arithmetic) are
already modules of their own.
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import sys
import time
import traceback
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from . import averaging, checkpoint, diskspace, eventkinds, eventlog, hostmemory, jobfiles, lr_policy, solvers, telemetry, tta
from .children import ChildDied
from .data import STILL_WORKING_SECONDS, Augment, Batches, DatasetInfo, Normalizer, SplitData, load_split
from .distributed import DeviceError, Placement, exit_process, setup
from .jobmain import job_config
from .networks import NetworkError, summary
from .tasks import task_of
from .tasks.training import training_for

REPORT_SECONDS = 0.5     # train events and progress
HARDWARE_SECONDS = 5.0
# What only resuming reads: kept in checkpoints/last.pt alone.
RESUME_ONLY = ("optimizer", "scaler", "augment", "rng_cpu", "rng_cuda", "training_weights")
STOP_CHECK_STEPS = 10    # optimiser steps: with several processes, they agree on stopping this often
WARMUP_STEPS = 5         # batches timed apart from training (at most half the run's)
HOST_DATA_BUDGET = 8 * 2**30  # bytes of pixels held whole on a machine, all splits and processes together
DATA_BUDGET_VARIABLE = "TRAIN_DATA_BUDGET"  # environment: that budget, in bytes
DEVICE_DATA_FRACTION = 0.5
INIT_FROM_DATA_IMAGES = 5000


class TrainingError(Exception):
    """A failure the user can act on; the message is shown on the job page."""


@dataclass
class Progress:
    """Where the run is; saved in every checkpoint."""

    epoch: int = 0
    batch: int = 0              # next batch of this epoch
    step: int = 0               # batches done since the start
    next_val: float = 0.0       # epoch at which the next validation is due
    next_snapshot: float = 0.0
    best: dict[str, Any] | None = None
    bad_validations: int = 0    # validations since the best one (early stopping)
    last_val: dict[str, float] = field(default_factory=dict)
    # Summed over every attempt, so a resumed run's result counts them all.
    train_seconds: float = 0.0
    warmup_seconds: float = 0.0
    images_trained: int = 0


class Run:
    """One training run: the model, its optimiser and data, and the loop."""

    def __init__(self, config: dict[str, Any], job_dir: Path, place: Placement) -> None:
        self.config, self.job_dir, self.place = config, job_dir, place
        self.device = place.device
        self.stop_requested = False
        self.last_train_loss: float | None = None
        self.last_hardware = 0.0
        self.updates = 0  # optimiser steps of this process's run (since its start or resume)
        self.stopping = False  # the processes' common decision to stop (``stop_requested`` is this one's wish)
        self.progress = Progress(next_val=config["val_interval"], next_snapshot=config["snapshot_interval"])
        # The last evaluation of each split's rows of its classes' scores (``Task.class_metrics``).
        self.class_scores: dict[str, list[dict[str, Any]]] = {}
        # This attempt's last validation (step, metrics) and the step last.pt last held.
        self.validation: tuple[int, dict[str, float]] | None = None
        self.last_saved_step: int | None = None
        self.layer_grads: dict[str, torch.Tensor | None] | None = None  # the gradients a validation's report shows
        self._setup_numerics()
        self._setup_task()
        self._setup_data()
        self._setup_model()
        self.epoch_batches = [len(self._train_batches_at(e)) for e in range(config["epochs"])]
        self.total_steps = sum(self.epoch_batches)
        if self.total_steps == 0:
            raise TrainingError("The training split has fewer images than one batch per process: "
                                "lower the batch size or use a larger dataset.")
        self.average = averaging.make(checkpoint.unwrap(self.model), config.get("averaging"), self.total_steps)
        self.unchecked_loss = torch.zeros((), device=self.device)  # losses since the processes last agreed
        self.policy = lr_policy.warmup_for(config["lr_policy"], place.world_size, config["scale_lr"])
        self.base_lr = lr_policy.effective_lr(config["lr"], place.world_size, config["scale_lr"])
        self.lr = self.base_lr  # the policy's rate at the last update (parameter groups take multiples of it)
        self.hardware = telemetry.Hardware([int(d.removeprefix("gpu")) for d in config.get("devices", [])
                                            if d.startswith("gpu")])
        self.profile = telemetry.Profile(job_dir, self.device)
        self.peak = telemetry.peak_flops(self.device, config["precision"])

    # -- set-up --------------------------------------------------------------

    def _setup_numerics(self) -> None:
        precision = self.config["precision"]
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = precision != "fp32"
        torch.backends.cudnn.allow_tf32 = precision != "fp32"
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        self.autocast = (torch.autocast(self.device.type, dtype=dtype) if dtype else nullcontext())
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=precision == "fp16")
        seed = int(self.config["seed"])
        random.seed(seed)
        torch.manual_seed(seed)

    def _setup_task(self) -> None:
        """The dataset's facts and its task's training side, which may refuse the job's options."""
        self.info = DatasetInfo.load(self.config[jobfiles.DATASET_DIR_PARAM])
        try:
            self.task_training = training_for(task_of(self.config), len(self.info.classes), self.config)
        except ValueError as exc:
            raise TrainingError(str(exc)) from exc

    def _setup_data(self) -> None:
        config, place = self.config, self.place
        dataset_dir = Path(config[jobfiles.DATASET_DIR_PARAM])
        budget = self._data_budget()
        self.splits = {}
        for split in ("train", "val", "test"):  # the training split first: it is read most
            data = load_split(dataset_dir, split, budget)
            if isinstance(data, SplitData):
                budget -= data.images.numel()  # uint8: one byte an element
            elif data is not None:
                self.log(f"the {split} split is larger than the memory left for data: streamed from disk")
            if data is not None:
                self.splits[split] = data.to(self.device)
        if "train" not in self.splits:
            raise TrainingError("The dataset has no training images.")
        height, width, channels = self.info.image_shape
        crop = config.get("crop")
        if crop and (crop > height or crop > width):
            raise TrainingError(f"The crop size {crop} is larger than the dataset's {width}×{height} images.")
        self.normalizer = Normalizer(config["mean"], self.info.mean, crop, device=self.device)
        self.augment = Augment(config, int(config["seed"]) * 1009 + place.rank, self.device)
        self.input_size = self.augment.output_size(height, width)
        self.channels = channels
        shared = {"seed": int(config["seed"]), "rank": place.rank, "world_size": place.world_size,
                  "device": self.device, "normalizer": self.normalizer,
                  "channels_last": bool(config.get("channels_last")), "follow": self.task_training.follow}
        self.train_batches = Batches(self.splits["train"], config["batch_size"], shuffle=True, augment=self.augment,
                                     drop_last=True, **shared)
        self.eval_batches = {split: Batches(data, config["batch_size"], shuffle=False, augment=None, drop_last=False,
                                            **shared)
                             for split, data in self.splits.items() if split != "train"}

    def _data_budget(self) -> int:
        """Bytes of pixels this process may hold whole, all splits together:
        its share of the machine's budget (each process holds its own copy)
        and, on a GPU, part of the memory free there."""
        budget = int(os.environ.get(DATA_BUDGET_VARIABLE) or HOST_DATA_BUDGET) // self.place.local_world_size
        if self.device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(self.device)
            budget = min(budget, int(free * DEVICE_DATA_FRACTION))
        return budget

    def _train_batches_at(self, epoch: int) -> Batches:
        self.train_batches.set_batch_size(lr_policy.batch_size_at(self.config.get("batch_schedule") or [],
                                                                  self.config["batch_size"], epoch))
        return self.train_batches

    def _setup_model(self) -> None:
        config = self.config
        height, width = self.input_size
        classes = len(self.info.classes)
        model = self.task_training.build(config["network"], self.channels, classes, height, width)
        self.summary = summary(model, self.channels, height, width)
        pretrained = config.get("pretrained")
        if pretrained:
            self._load_pretrained(model, pretrained)
        elif hasattr(model, "init_from_data") and not self._resuming():
            model.init_from_data(self._sample_images(INIT_FROM_DATA_IMAGES).cpu())
        model.to(self.device)
        if config.get("channels_last"):
            model.to(memory_format=torch.channels_last)
        self.model = model
        self.optimizer = solvers.make_optimizer(config["solver"], self._parameter_groups(model), config["lr"],
                                                config["momentum"], config["weight_decay"])
        wrapped: torch.nn.Module = model
        self.ddp: DistributedDataParallel | None = None
        if self.place.distributed:
            wrapped = self.ddp = DistributedDataParallel(
                model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        # Compiled around DDP, so that its all-reduces overlap the backward
        # pass; ``no_sync`` is then asked of the DDP module itself.
        self.net = torch.compile(wrapped) if config.get("compile") else wrapped
        self.predict = tta.predictor(config.get("tta") or "none")  # the task's ``predict`` applies it where it can

    def _parameter_groups(self, model: torch.nn.Module) -> list[dict[str, Any]]:
        """The optimiser's groups: BatchNorm biases at their own rate and
        weight decay when asked, and the whitening bias (FastNet's) trained
        for the first ``whiten_bias_epochs`` only."""
        config = self.config
        limited: dict[int, int] = {}
        if config.get("whiten_bias_epochs"):
            if not hasattr(model, "whitening_bias"):
                raise TrainingError("Only a network with a whitening layer (the fast small-image network) can train "
                                    "its whitening bias for the first epochs only: clear that option.")
            limited[id(model.whitening_bias())] = int(config["whiten_bias_epochs"]) - 1  # last epoch, from 0
        return solvers.parameter_groups(model, config["weight_decay"], config.get("norm_bias_lr_scale"),
                                        config.get("norm_bias_weight_decay"), limited)

    def _sample_images(self, count: int) -> torch.Tensor:
        return self.normalizer(self.splits["train"].head(count).to(self.device))

    def _load_pretrained(self, model: torch.nn.Module, pretrained: dict[str, Any]) -> None:
        try:
            weights = checkpoint.load(pretrained["path"])["model"]
        except (OSError, KeyError, RuntimeError) as exc:
            raise TrainingError(f"Cannot read the earlier snapshot {pretrained['path']}: {exc}") from exc
        if pretrained.get("mode") == "backbone":
            self._load_backbone(model, weights, pretrained["path"])
            return
        kept, dropped = checkpoint.matching_weights(model, weights)
        if dropped and pretrained.get("mode") == "continue":
            raise TrainingError("The earlier network does not match this one (" + ", ".join(dropped[:5])
                                + "); choose fine-tune to re-initialise the layers that differ.")
        model.load_state_dict(kept, strict=False)
        self.log(f"loaded {len(kept)} tensors from {pretrained['path']}"
                 + (f"; re-initialised {', '.join(dropped)}" if dropped else ""))

    def _load_backbone(self, model: torch.nn.Module, weights: dict[str, Any], path: str) -> None:
        """A pretrained classifier's weights into the backbone of the task's
        network (a detector's): the task says where they go."""
        place = getattr(self.task_training, "backbone_weights", None)
        if place is None:
            raise TrainingError("This task's networks do not start a backbone from a pretrained model.")
        try:
            kept = place(self.config["network"], model, weights)
        except NetworkError as exc:
            raise TrainingError(str(exc)) from exc
        model.load_state_dict(kept, strict=False)
        self.log(f"loaded the backbone's {len(kept)} tensors from {path}; the rest starts untrained")

    # -- checkpoints ---------------------------------------------------------

    def _resuming(self) -> bool:
        return (self.job_dir / jobfiles.LAST_CHECKPOINT).exists()

    def state(self) -> dict[str, Any]:
        augment_states = self.place.gather(self.augment.state_dict())
        return {
            "model": self.average.weights(),  # what the job delivers: the average where there is one
            "training_weights": self.average.training_weights(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "progress": vars(self.progress) | {},
            "augment": augment_states,
            "rng_cpu": torch.get_rng_state(),
            "rng_cuda": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
            "classes": list(self.info.classes),
            "network": self.config["network"],
            "input": [self.channels, *self.input_size],
        }

    def weights_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """A checkpoint no run resumes from (a snapshot, the best): the state
        without what only resuming reads (the optimiser's moments are as large
        as the model, or twice)."""
        return {key: value for key, value in state.items() if key not in RESUME_ONLY}

    def save(self, name: str, state: dict[str, Any] | None = None) -> str:
        """Write a checkpoint (every rank takes part in gathering, rank 0 writes)."""
        state = state or self.state()
        relative = jobfiles.checkpoint(name)
        if self.place.is_main:
            checkpoint.save(self.job_dir / relative, state)
        return relative

    def resume(self) -> None:
        state = checkpoint.load(self.job_dir / jobfiles.LAST_CHECKPOINT)
        self.model.load_state_dict(state.get("training_weights") or state["model"])
        self.average.load(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scaler.load_state_dict(state["scaler"])
        self.progress = Progress(**state["progress"])
        augment_states = state["augment"]
        if len(augment_states) == self.place.world_size:
            self.augment.load_state_dict(augment_states[self.place.rank])
        torch.set_rng_state(state["rng_cpu"])
        if self.device.type == "cuda" and state["rng_cuda"] is not None:
            torch.cuda.set_rng_state(state["rng_cuda"], self.device)
        p = self.progress
        self.emit(eventkinds.RESUME, eventkinds.resume(p.step, self.epoch_float(p.epoch, p.batch)))
        # The bar shows where the run resumed, not where the last run reached or 0.
        self.emit(eventkinds.PROGRESS, {"progress": min(p.step / self.total_steps, 1.0),
                                        "epoch": self.epoch_float(p.epoch, p.batch)})
        self.log(f"resumed at epoch {p.epoch}, batch {p.batch} (step {p.step})")

    # -- reporting -----------------------------------------------------------

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        if self.place.is_main:
            eventlog.append(self.job_dir, kind, data)

    def log(self, text: str) -> None:
        if self.place.is_main:
            print(text, flush=True)

    def epoch_float(self, epoch: int, batch: int) -> float:
        count = self.epoch_batches[epoch] if epoch < len(self.epoch_batches) else 1
        return epoch + batch / max(count, 1)

    # -- the loop ------------------------------------------------------------

    def train(self) -> dict[str, Any]:
        config = self.config
        if self._resuming():
            self.resume()
        else:
            self.emit(eventkinds.NETWORK, {"summary": self.summary, "input": [self.channels, *self.input_size],
                                  "classes": list(self.info.classes)})
            if self.place.is_main:
                (self.job_dir / jobfiles.NETWORK_SUMMARY).write_text(json.dumps(self.summary))
        self.log(f"training {config['network'].get('name') or config['network']['source']} on {self.device} "
                 f"({self.place.world_size} process(es)), {self.total_steps} steps, lr {self.base_lr:g}")
        self.warmup_left = min(WARMUP_STEPS, (self.total_steps - self.progress.step) // 2)
        stopped_early = False
        while self.progress.epoch < config["epochs"] and not self.agree():  # each epoch's start: a decision point
            stopped_early = self.train_one_epoch()
            if stopped_early or self.stopping:
                break
        if self.profile.active:
            self.emit(eventkinds.PROFILE, self.profile.stop())
        if self.stopping:
            self.save(jobfiles.LAST)
            self.log("stopped: checkpoint saved for resuming")
            return {}
        return self.finish(stopped_early)

    def train_one_epoch(self) -> bool:
        """Train from the current position to the end of the epoch. Returns
        True when early stopping ends the run."""
        p, config = self.progress, self.config
        batches = self._train_batches_at(p.epoch)
        batches.set_epoch(p.epoch)
        batches.start_at(p.batch)
        accumulation = max(int(config["batch_accumulation"]), 1)
        self.net.train()
        loss_sum = torch.zeros((), device=self.device)  # summed on the device, read at reporting points
        parts_sum: dict[str, torch.Tensor] = {}  # the loss's components (a task that has them), likewise
        reported_step, report_time, wait_start = p.step, time.perf_counter(), batches.data_wait_seconds
        for x, y in batches:
            p.batch += 1
            p.step += 1
            epoch_now = self.epoch_float(p.epoch, p.batch)
            update = p.batch % accumulation == 0 or p.batch == self.epoch_batches[p.epoch]
            if update:
                self.lr = lr_policy.lr_at(self.policy, self.base_lr, p.step, self.total_steps)
                solvers.set_lr(self.optimizer, self.lr, p.epoch)
            loss, parts = self.step(x, y, accumulation, update, collect=epoch_now >= p.next_val - 1e-9)
            loss_sum += loss
            for name, part in (parts or {}).items():
                parts_sum[name] = parts_sum[name] + part if name in parts_sum else part
            if self.place.distributed:  # one process checks its loss at its reports
                self.unchecked_loss += loss
            if self.profile.active and (report := self.profile.step_done()):
                self.emit(eventkinds.PROFILE, report)
            warming_up, self.warmup_left = self.warmup_left > 0, max(self.warmup_left - 1, 0)
            validating, snapshotting = epoch_now >= p.next_val - 1e-9, epoch_now >= p.next_snapshot - 1e-9
            # An interval ends at the clock, at the warm-up's end and before
            # work that is not training (validation, snapshots, the epoch's end).
            if (time.perf_counter() - report_time >= REPORT_SECONDS or (warming_up and not self.warmup_left)
                    or validating or snapshotting or p.batch == self.epoch_batches[p.epoch]):
                self.place.synchronize()  # host-device sync: the interval holds its last kernel
                now = time.perf_counter()
                self.report(loss_sum, parts_sum, p.step - reported_step, now - report_time,
                            batches.data_wait_seconds - wait_start, epoch_now, batches.batch_size, warming_up)
                loss_sum.zero_()
                parts_sum = {}
                reported_step, report_time, wait_start = p.step, now, batches.data_wait_seconds
                if self.place.is_main:
                    self.report_host(now)
            if validating or snapshotting:
                self.agree()  # a loss gone bad on any process fails them all before it is validated or saved
            if validating and self.validate(epoch_now):
                return True
            if snapshotting:
                p.next_snapshot += config["snapshot_interval"]
                self.snapshot(epoch_now)
            if validating or snapshotting:
                # not training time: the next report's interval starts after them
                report_time, wait_start = time.perf_counter(), batches.data_wait_seconds
            if update:  # never between accumulated batches
                self.updates += 1
                if (not self.place.distributed or self.updates % STOP_CHECK_STEPS == 0) and self.agree():
                    return False
        p.epoch += 1
        p.batch = 0
        return False

    def step(self, x: torch.Tensor, y: torch.Tensor, accumulation: int, update: bool,
             collect: bool) -> tuple[torch.Tensor, dict[str, torch.Tensor] | None]:
        """Forward and backward of one batch; an optimiser step every
        ``accumulation`` batches. Returns the batch's loss and its
        components (None for a task without), on the device."""
        accumulating = self.ddp is not None and not update  # gradients stay local until the update
        with self.autocast, (self.ddp.no_sync() if accumulating else nullcontext()):
            loss, parts = self.task_training.loss(self.net, x, y)
        self.scaler.scale(loss / accumulation).backward()
        if update:
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.average.update(self.progress.step)
            if collect:  # their statistics are reporting work, done after the interval ends
                self.layer_grads = telemetry.gradients(self.model)
            self.optimizer.zero_grad(set_to_none=True)
        return loss.detach().float(), parts

    def report_host(self, now: float) -> None:
        """Hardware readings every few seconds; start a profile when the web
        app asked for one (checked here, not at every step)."""
        if now - self.last_hardware >= HARDWARE_SECONDS:
            self.emit(eventkinds.HARDWARE, self.hardware.read())
            self.last_hardware = now
        if not self.profile.active and self.profile.requested():
            self.profile.start(self.progress.step)

    def agree(self) -> bool:
        """Whether the processes stop here (an abort reached any of them);
        with several, fails them all when the training loss of any was not
        finite since they last agreed. Every process calls it at the same
        steps (a collective, and a host-device sync, with several)."""
        if not self.place.distributed:
            self.stopping = self.stop_requested
            return self.stopping
        status = torch.zeros(self.place.world_size, 2, device=self.device)
        status[self.place.rank, 0] = float(self.stop_requested)
        status[self.place.rank, 1] = self.unchecked_loss
        self.unchecked_loss.zero_()
        rows = self.place.all_reduce_sum(status).tolist()  # host-device sync: every STOP_CHECK_STEPS steps
        for rank, (_, loss) in enumerate(rows):
            if not math.isfinite(loss):
                raise TrainingError(f"The training loss became {loss} in process {rank} at epoch "
                                    f"{self.epoch_float(self.progress.epoch, self.progress.batch):.2f}: "
                                    "try a lower learning rate.")
        self.stopping = any(stop for stop, _ in rows)
        return self.stopping

    def report(self, loss_sum: torch.Tensor, parts_sum: dict[str, torch.Tensor], steps: int, seconds: float,
               data_wait: float, epoch: float, batch_size: int, warming_up: bool) -> None:
        # This process's own loss, no collective: reports are due by the clock,
        # which the processes do not share (``agree`` and validation are the collectives).
        loss = loss_sum.item() / max(steps, 1)  # host-device sync, after the interval's own
        components = None
        if parts_sum:
            sums = torch.stack([part.float() for part in parts_sum.values()]).tolist()  # host-device sync, the same
            components = {name: total / max(steps, 1) for name, total in zip(parts_sum, sums, strict=True)}
        if not math.isfinite(loss) and not self.place.distributed:
            raise TrainingError(f"The training loss became {loss} at epoch {epoch:.2f}: try a lower learning rate.")
        images = steps * batch_size * self.place.world_size
        if warming_up:
            self.progress.warmup_seconds += seconds
        else:
            self.progress.images_trained += images
            self.progress.train_seconds += seconds
        self.last_train_loss = loss
        rate = images / max(seconds, 1e-9)
        wait = min(data_wait / max(seconds, 1e-9), 1.0)
        p = self.progress
        self.emit(eventkinds.TRAIN, eventkinds.train(p.step, epoch, loss, self.lr, batch_size, rate, wait, components))
        self.emit(eventkinds.PROGRESS, {"progress": min(p.step / self.total_steps, 1.0), "epoch": epoch, "loss": loss})
        if warming_up:
            return
        flops = self.summary.get("flops_per_image") or 0
        mfu = 3 * flops * rate / (self.peak * self.place.world_size) if self.peak and flops else None
        self.emit(eventkinds.PERF, eventkinds.perf(rate, wait, 1000 * seconds / max(steps, 1), flops, mfu,
                                                   str(self.device), self.progress.warmup_seconds))

    @torch.no_grad()
    def evaluate(self, split: str) -> dict[str, float] | None:
        batches = self.eval_batches.get(split)
        if batches is None:
            return None
        # The plain module, not DDP: its forward may broadcast buffers, a
        # collective that ranks with uneven evaluation shards would not all join.
        # It holds the averaged weights where there are some, and their
        # running statistics (BatchNorm's) are made one model's first.
        evaluation = self.task_training.evaluation(self.device)
        with self.average.evaluated():
            self.place.average_([b for b in self.model.buffers() if b.is_floating_point()])
            self.model.eval()
            batches.set_epoch(0)
            said = time.perf_counter()
            for number, (x, y) in enumerate(batches, 1):
                if time.perf_counter() - said >= STILL_WORKING_SECONDS:  # no sync: the clock only
                    self.log(f"{split}: batch {number} of {len(batches)}")
                    said = time.perf_counter()
                with self.autocast:
                    outputs = self.task_training.predict(self.model, x, y, self.predict)
                evaluation.update(outputs, y)
            self.model.train()
        metrics = evaluation.compute()  # a collective, and a host-device sync: end of evaluation
        if task_of(self.config).class_metrics:
            self.class_scores[split] = evaluation.per_class(list(self.info.classes))
        return metrics

    def validate(self, epoch: float) -> bool:
        """Validate, report layers, keep the best. Returns True when early
        stopping ends the run."""
        p, config = self.progress, self.config
        p.next_val += config["val_interval"]
        metrics = self.evaluate("val")
        self.report_layers(epoch)
        if metrics is None:
            return False
        self.validation = (p.step, metrics)
        p.last_val = {f"val_{name}": value for name, value in metrics.items()}
        self.emit(eventkinds.VAL, eventkinds.val(p.step, epoch, metrics))
        self.log(f"epoch {epoch:.2f}: val {self.task_training.describe(metrics)}")
        if not math.isfinite(metrics["loss"]):
            raise TrainingError(f"The validation loss became {metrics['loss']} at epoch {epoch:.2f}: "
                                "try a lower learning rate.")
        stopping = config.get("early_stopping") or {}
        metric = stopping.get("metric") or task_of(config).best_by
        if metric not in p.last_val:
            raise TrainingError(f"Early stopping watches {metric}, which this task's validation does not "
                                f"report: choose one of {', '.join(p.last_val)}.")
        value = p.last_val[metric]
        improved = p.best is None or (value < p.best["value"] if metric == "val_loss" else value > p.best["value"])
        if improved:
            file = self.save(jobfiles.BEST, self.weights_state(self.state()))
            p.best = {"epoch": epoch, "step": p.step, "metric": metric, "value": value, "file": file}
            p.bad_validations = 0
            self.emit(eventkinds.BEST, dict(p.best))
        else:
            p.bad_validations += 1
        if stopping and p.bad_validations >= int(stopping.get("patience") or 5):
            self.log(f"early stopping: {metric} has not improved for {p.bad_validations} validations")
            return True
        return False

    def report_layers(self, epoch: float) -> None:
        layers = telemetry.layer_statistics(self.model, self.layer_grads)
        self.layer_grads = None
        filters = filters_together = None
        weight = telemetry.first_conv_weight(self.model)
        if weight is not None and self.place.is_main:
            filters = jobfiles.filters_image(self.progress.step)
            filters_together = jobfiles.filters_image(self.progress.step, together=True)
            telemetry.filters_image(weight, self.job_dir / filters)
            telemetry.filters_image(weight, self.job_dir / filters_together, together=True)
        self.emit(eventkinds.LAYERS, {"step": self.progress.step, "epoch": epoch, "filters": filters,
                                      "filters_together": filters_together, "layers": layers})

    def snapshot(self, epoch: float) -> None:
        p = self.progress
        state = self.state()
        file = self.save(jobfiles.snapshot_name(epoch), self.weights_state(state))
        self.save(jobfiles.LAST, state)
        self.last_saved_step = p.step
        best = bool(p.best and p.best["step"] == p.step)
        removed = self.remove_old_snapshots()
        self.emit(eventkinds.SNAPSHOT, eventkinds.snapshot(p.step, epoch, file, best,
                                                           {**p.last_val, "train_loss": self.last_train_loss}, removed))

    def remove_old_snapshots(self) -> list[str]:
        """Delete the snapshots before the last ``keep_snapshots`` (none when
        it is 0 or absent); the best and the resuming checkpoint are apart.
        Returns the removed files."""
        keep = self.config.get("keep_snapshots") or 0
        if not keep or not self.place.is_main:
            return []
        older = [file for file in jobfiles.snapshots(self.job_dir) if file != jobfiles.BEST_CHECKPOINT][:-keep]
        for file in older:
            (self.job_dir / file).unlink(missing_ok=True)
        return older

    def finish(self, stopped_early: bool) -> dict[str, Any]:
        p = self.progress
        final: dict[str, float] = {}
        for split in ("val", "test"):
            metrics = self.final_metrics(split)
            if metrics:
                final.update({f"{split}_{k}": v for k, v in metrics.items()})
        epoch = self.epoch_float(p.epoch, p.batch) if p.epoch < len(self.epoch_batches) else float(p.epoch)
        if self.last_saved_step != p.step:  # a snapshot at the last step has written these weights already
            self.save(jobfiles.LAST)
        if self.place.is_main:
            self.export()
        per_class = {split: self.class_scores[split] for split in ("val", "test")
                     if f"{split}_loss" in final and split in self.class_scores}
        result = eventkinds.result(p.best, final, epoch, p.train_seconds, p.warmup_seconds,
                                   p.images_trained / max(p.train_seconds, 1e-9), stopped_early, per_class)
        self.emit(eventkinds.RESULT, result)
        self.log("done: " + ", ".join(f"{k} {v:.4f}" for k, v in final.items()))
        return result

    def final_metrics(self, split: str) -> dict[str, float] | None:
        """The split's metrics at the end of training: the validation split's
        are the last validation's when it ran at this step (the same model,
        so evaluating it again would only repeat the work)."""
        if split == "val" and self.validation and self.validation[0] == self.progress.step:
            return self.validation[1]
        return self.evaluate(split)

    def export(self) -> None:
        """The trained model for download: weights, network spec, classes and
        the input it expects, readable with ``torch.load(weights_only=True)``.
        The best checkpoint's weights (the average where there is one), read
        back only when they are not the ones in memory (the best was an
        earlier step)."""
        best = self.progress.best
        if best is None or best["step"] == self.progress.step:
            weights = {name: tensor.cpu() for name, tensor in self.average.weights().items()}
        else:
            weights = checkpoint.load(self.job_dir / jobfiles.BEST_CHECKPOINT)["model"]
        normalization = {"mean": self.config["mean"], "crop": self.config.get("crop")}
        checkpoint.save(self.job_dir / jobfiles.EXPORTED_MODEL, {
            "model": weights, "network": self.config["network"], "classes": list(self.info.classes),
            "input": [self.channels, *self.input_size], "normalization": normalization})


def _describe_failure(exc: BaseException, config: dict[str, Any], job_dir: Path) -> str:
    if isinstance(exc, (TrainingError, NetworkError, DeviceError)):
        return str(exc)
    if diskspace.is_full(exc):
        return diskspace.full_message(job_dir)
    if isinstance(exc, torch.OutOfMemoryError):
        return (f"The GPU ran out of memory with a batch size of {config.get('batch_size')}: "
                "try a smaller batch size (or mixed precision).")
    # An error nobody foresaw: its traceback goes to the log, where the job
    # page shows it, and the job's error is one sentence naming it.
    traceback.print_exception(exc, file=sys.stderr)
    said = " ".join(str(exc).split())[:300]
    return (f"Training failed on an unexpected error ({type(exc).__name__}: {said}); retry it, "
            "and if it fails the same way again, its log shows where.")


def report_failure(job_dir: Path, message: str, own: bool, earlier: eventlog.Reader) -> None:
    """Log a process's failure and make it the job's error unless another
    process of the run reported first: a process that fails alone ends the
    others' collectives, and theirs ("connection closed by peer") would hide
    the cause. ``own``: a failure of this process alone, named with its rank;
    the others (a ``TrainingError``) every process meets alike, and the main
    one reports. On a full disk either write may fail too: then the worker,
    finding no error, tells the user of the disk itself."""
    rank, world_size = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    if world_size > 1 and own:
        message = f"Process {rank} of {world_size}: {message}"
    try:
        print(message, file=sys.stderr, flush=True)
        if (own or rank == 0) and not any(e["kind"] == eventkinds.ERROR for e in earlier.read()):
            eventlog.append(job_dir, eventkinds.ERROR, {"message": message})
    except OSError as exc:
        if not diskspace.is_full(exc):
            raise


def main(config_path: str) -> int:
    job_dir, config = job_config(config_path)
    this_run = eventlog.Reader(job_dir)
    this_run.read()  # what earlier runs wrote; errors are looked for after it
    place: Placement | None = None
    runs: list[Run] = []
    stop_requested: list[bool] = []

    def stop(signum: int, frame: object) -> None:
        stop_requested.append(True)
        for run in runs:
            run.stop_requested = True

    signal.signal(signal.SIGTERM, stop)
    hostmemory.keep_freed_memory()
    try:
        place = setup(config.get("devices", []))
        runs.append(Run(config, job_dir, place))
        runs[0].stop_requested = bool(stop_requested)
        runs[0].train()
    except Exception as exc:
        if isinstance(exc, ChildDied) and stop_requested:
            print("stopped while reading the data (the abort ended its decoding processes)", flush=True)
            return 0
        own = not isinstance(exc, (TrainingError, NetworkError))
        report_failure(job_dir, _describe_failure(exc, config, job_dir), own, this_run)
        return 1
    finally:
        if place is not None:
            place.close()
    return 0


if __name__ == "__main__":
    exit_process(main(sys.argv[1]))
