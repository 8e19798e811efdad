"""How much does a fused optimiser step save? The trainer's solvers
(``trainer.solvers.make_optimizer``) against the same torch optimiser as a
plain loop builds it (its default: a loop over the tensors on the CPU), on
the parameters of the networks the app trains, with gradients of the
networks' shapes. The two alternate in rounds; printed are each network's
milliseconds a step on both sides and the median ratio plain/app with its
range (above 1: the app's step is faster).

    .venv/bin/python bench/optimizer_step.py [--rounds 5] [--steps 20] [--threads N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import median

import torch
import torchvision

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stack import machine  # noqa: E402
from train_overhead import spread  # noqa: E402

from trainer.solvers import make_optimizer  # noqa: E402

NETWORKS = {
    "resnet18": lambda: torchvision.models.resnet18(num_classes=10),
    "fasterrcnn_mobilenet_v3_large_fpn": lambda: torchvision.models.detection.fasterrcnn_mobilenet_v3_large_fpn(
        weights=None, weights_backbone=None, num_classes=3),
}
SOLVERS = {"momentum": lambda params: torch.optim.SGD(params, lr=0.001, momentum=0.9, weight_decay=1e-4),
           "adamw": lambda params: torch.optim.AdamW(params, lr=0.001, weight_decay=1e-4)}


def step_ms(optimizer: torch.optim.Optimizer, steps: int) -> float:
    for _ in range(3):  # the state's first allocation
        optimizer.step()
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.step()
    return 1000 * (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"machine: {machine()}; torch threads {torch.get_num_threads()}; {args.rounds} alternated rounds of "
          f"{args.steps} steps")
    for network, build in NETWORKS.items():
        params = list(build().parameters())
        for param in params:
            param.grad = torch.randn_like(param) * 1e-3
        for solver, plain in SOLVERS.items():
            apps, plains = [], []
            for number in range(args.rounds):  # the side that goes first alternates
                for side in ("app", "plain") if number % 2 == 0 else ("plain", "app"):
                    optimizer = make_optimizer(solver, params, 0.001, 0.9, 1e-4) if side == "app" else plain(params)
                    (apps if side == "app" else plains).append(step_ms(optimizer, args.steps))
            count = sum(p.numel() for p in params)
            print(f"{network} ({len(params)} tensors, {count / 1e6:.1f} M values), {solver}: app "
                  f"{median(apps):.1f} ms a step, plain {median(plains):.1f} ms; plain/app "
                  f"{spread([p / a for a, p in zip(apps, plains, strict=True)])}")


if __name__ == "__main__":
    main()
