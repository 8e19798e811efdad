"""The solvers a training job can use, with LARS and LAMB written here.

The trainer sets the learning rate itself before every step (``set_lr`` with
the value of ``lr_policy.lr_at``), so no torch LR scheduler is involved and a
resumed job follows exactly the rate it would have had.

``parameter_groups`` splits a model's parameters for the optimiser: the
biases of its BatchNorm layers may take their own multiple of the rate and
their own weight decay (airbench's 64× rate for them), and some parameters
may train for the first epochs only (airbench's whitening bias). Each group
carries its ``lr_scale`` and ``last_epoch``; ``set_lr`` applies them, so a
group past its last epoch gets a rate of 0 and its parameters stop changing,
while every parameter keeps its gradient (DDP's all-reduce sees the same
parameters at every step).

LARS and LAMB keep every quantity on the parameters' device: trust ratios are
chosen with ``torch.where`` rather than Python conditions on norms, so a step
never waits for the device.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor

from .catalog import SOLVERS, uses_momentum

__all__ = ["LAMB", "LARS", "SOLVERS", "make_optimizer", "parameter_groups", "set_lr", "uses_momentum"]

EVERY_EPOCH = 2**31  # the ``last_epoch`` of a group that always trains
FUSED_DEVICES = ("cpu", "cuda")  # where torch's fused optimiser kernels run and are tried here


Params = Iterable[Tensor] | Iterable[dict[str, Any]]


def make_optimizer(name: str, params: Params, lr: float, momentum: float, weight_decay: float) -> torch.optim.Optimizer:
    """The optimizer called ``name`` (one of SOLVERS) over ``params``.

    Solvers that do not use momentum ignore it; adadelta takes ``lr`` as given
    (PyTorch's default for it is 1.0). Those torch has a fused kernel for
    (SGD, Adam, AdamW, Adagrad) use it where the parameters allow
    (``fusable``): one kernel for every tensor instead of a loop of small
    operations each. On a Faster R-CNN MobileNetV3 (192 tensors, 19 M
    values, 2 CPU threads) AdamW's step took 10 ms fused against 60 to 68 ms
    (``bench/optimizer_step.py``), a fifth of the training step.
    """
    params = list(params)
    fused = {"fused": True} if fusable(params) else {}
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay, **fused)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay, **fused)
    if name == "nesterov":
        if momentum <= 0:
            raise ValueError("Nesterov momentum needs a momentum above 0")
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=True, **fused)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, **fused)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, **fused)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    if name == "adagrad":
        return torch.optim.Adagrad(params, lr=lr, weight_decay=weight_decay, **fused)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, weight_decay=weight_decay)
    if name == "lars":
        return LARS(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    if name == "lamb":
        return LAMB(params, lr=lr, weight_decay=weight_decay)
    names = ", ".join(solver for solver, _label in SOLVERS)
    raise ValueError(f"unknown solver {name!r}; choose one of {names}")


def fusable(params: list[Tensor] | list[dict[str, Any]]) -> bool:
    """Whether torch's fused optimiser kernels take these parameters: all
    floating point, dense, on one CPU or CUDA device."""
    tensors = [t for item in params for t in (item["params"] if isinstance(item, dict) else [item])]
    devices = {t.device for t in tensors}
    return (bool(tensors) and len(devices) == 1 and next(iter(devices)).type in FUSED_DEVICES
            and all(t.is_floating_point() and not t.is_sparse for t in tensors))


def parameter_groups(model: torch.nn.Module, weight_decay: float, norm_bias_lr_scale: float | None = None,
                     norm_bias_weight_decay: float | None = None,
                     limited: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """``model``'s parameters as optimiser groups, the empty ones left out:
    BatchNorm biases with ``norm_bias_lr_scale`` × the rate and
    ``norm_bias_weight_decay`` (each the others' when None), the rest with
    ``weight_decay``. ``limited`` maps ``id(parameter)`` to the last epoch
    (0-based) it trains in; those parameters get groups of their own."""
    limited = limited or {}
    norm_biases = {id(module.bias) for module in model.modules()
                   if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and module.bias is not None}
    norm = {"lr_scale": 1.0 if norm_bias_lr_scale is None else norm_bias_lr_scale,
            "weight_decay": weight_decay if norm_bias_weight_decay is None else norm_bias_weight_decay}
    other = {"lr_scale": 1.0, "weight_decay": weight_decay}
    groups: dict[tuple[str, int], dict[str, Any]] = {}
    for param in model.parameters():
        kind = "norm" if id(param) in norm_biases else "other"
        last = limited.get(id(param), EVERY_EPOCH)
        group = groups.setdefault((kind, last), {"params": [], **(norm if kind == "norm" else other), "last_epoch": last})
        group["params"].append(param)
    return list(groups.values())


def set_lr(optimizer: torch.optim.Optimizer, lr: float, epoch: int = 0) -> None:
    """Give each parameter group of ``optimizer`` the learning rate ``lr``
    times its ``lr_scale`` (1 when absent), or 0 after its ``last_epoch``."""
    for group in optimizer.param_groups:
        trains = epoch <= group.get("last_epoch", EVERY_EPOCH)
        group["lr"] = lr * group.get("lr_scale", 1.0) if trains else 0.0


def _adapted(param: Tensor) -> bool:
    """Whether layer-wise adaptation and weight decay apply: weights, not biases or norm scales."""
    return param.ndim > 1


def _trust_ratio(numerator: Tensor, denominator: Tensor, weight_norm: Tensor, update_norm: Tensor) -> Tensor:
    """numerator / denominator, or 1 where either norm is 0 (a fresh zero layer, or no gradient)."""
    usable = (weight_norm > 0) & (update_norm > 0)
    return torch.where(usable, numerator / torch.where(usable, denominator, torch.ones_like(denominator)), 1.0)


class _PerParameter(torch.optim.Optimizer):
    """An optimiser whose ``step`` runs the closure (as torch's do) and then
    ``update_parameter`` on each parameter that has a gradient."""

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    self.update_parameter(param, param.grad, group, self.state[param])
        return loss

    def update_parameter(self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        raise NotImplementedError


class LARS(_PerParameter):
    """Layer-wise Adaptive Rate Scaling (You, Gitman and Ginsburg 2017, Algorithm 1).

    For each weight tensor w with gradient g, the local rate is
    ``trust * ||w|| / (||g|| + weight_decay * ||w||)`` (1 when either norm is 0) and
    ``v = momentum * v + lr * local * (g + weight_decay * w); w = w - v``.
    Biases and normalisation parameters (1-D or scalars) take plain momentum SGD,
    without adaptation or weight decay.
    """

    def __init__(
        self,
        params: Params,
        lr: float,
        momentum: float = 0.9,
        weight_decay: float = 0.0,
        trust_coefficient: float = 0.001,
    ) -> None:
        if lr < 0 or momentum < 0 or weight_decay < 0 or trust_coefficient <= 0:
            raise ValueError("LARS needs lr, momentum and weight decay >= 0 and a trust coefficient > 0")
        defaults = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "trust_coefficient": trust_coefficient}
        super().__init__(params, defaults)

    def update_parameter(self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        lr, momentum = group["lr"], group["momentum"]
        decay, trust = group["weight_decay"], group["trust_coefficient"]
        if lr == 0:  # the momentum holds past rates: a group at rate 0 stops here, as with the other solvers
            return
        if _adapted(param):
            weight_norm = torch.linalg.vector_norm(param)
            grad_norm = torch.linalg.vector_norm(grad)
            local = _trust_ratio(trust * weight_norm, grad_norm + decay * weight_norm, weight_norm, grad_norm)
            update = grad.add(param, alpha=decay).mul_(local * lr)
        else:
            update = grad.mul(lr)
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = update
        else:
            update = state["momentum_buffer"].mul_(momentum).add_(update)
        param.sub_(update)


class LAMB(_PerParameter):
    """Layer-wise Adaptive Moments for Batch training (You et al. 2019, Algorithm 2).

    Adam's bias-corrected moments give ``r = m_hat / (sqrt(v_hat) + eps) + weight_decay * w``;
    each weight tensor moves by ``lr * ||w|| / ||r|| * r`` (ratio 1 when either norm
    is 0). Biases and normalisation parameters (1-D or scalars) take a plain Adam
    step without weight decay.
    """

    def __init__(
        self,
        params: Params,
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
    ) -> None:
        if lr < 0 or weight_decay < 0 or eps <= 0 or not all(0 <= beta < 1 for beta in betas):
            raise ValueError("LAMB needs lr and weight decay >= 0, eps > 0 and betas in [0, 1)")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def update_parameter(self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        lr, (beta1, beta2) = group["lr"], group["betas"]
        eps, decay = group["eps"], group["weight_decay"]
        if not state:
            # The step count is a host int: bias corrections need no device read.
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(param)
            state["exp_avg_sq"] = torch.zeros_like(param)
        state["step"] += 1
        step = state["step"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denominator = (exp_avg_sq / (1 - beta2**step)).sqrt_().add_(eps)
        update = (exp_avg / (1 - beta1**step)).div_(denominator)
        if _adapted(param):
            update.add_(param, alpha=decay)
            weight_norm = torch.linalg.vector_norm(param)
            update_norm = torch.linalg.vector_norm(update)
            ratio = _trust_ratio(weight_norm, update_norm, weight_norm, update_norm)
            update.mul_(ratio * lr)
        else:
            update.mul_(lr)
        param.sub_(update)
