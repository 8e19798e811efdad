"""Presets of the New model form: field values a button on the page fills in.

The CIFAR-10 speed run is airbench94 (Jordan 2024, arXiv 2404.00498) in this
form's terms. airbench sums the loss over the batch and states its rate and
weight decay per 1,024 examples, divided by ``1 + 1/(1 - momentum)`` (the
step size Nesterov momentum builds from a steady gradient). Here the loss is
the batch's mean, whose gradient is the sum's divided by the batch size, so:

- learning rate = 11.5 / (1 + 1/(1 - 0.85)) = 1.5 at batch 1,024;
- weight decay = 0.0153 / 11.5 (PyTorch's coupled decay: airbench's group
  decay is its decay over its rate, and the mean divides the gradient, not
  the decay term, by the batch);
- BatchNorm biases at 64× the rate with 1/64 of that decay, so that their
  decay per step is the other parameters';
- 10 epochs where airbench trains 9.9 (this form counts whole epochs).
"""

from __future__ import annotations

from typing import Any

from trainer import lr_policy

AIRBENCH_LR = 11.5             # per 1,024 examples, summed loss
AIRBENCH_WEIGHT_DECAY = 0.0153  # per 1,024 examples
AIRBENCH_MOMENTUM = 0.85
AIRBENCH_BIAS_SCALER = 64.0
AIRBENCH_BATCH = 1024

SPEEDRUN_LR = AIRBENCH_LR * AIRBENCH_BATCH / 1024 / (1 + 1 / (1 - AIRBENCH_MOMENTUM))
SPEEDRUN_WEIGHT_DECAY = AIRBENCH_WEIGHT_DECAY / AIRBENCH_LR
SPEEDRUN_EPOCHS = 10

SPEEDRUN: dict[str, Any] = {
    "network_source": "standard", "standard_network": "fastnet",
    "epochs": SPEEDRUN_EPOCHS, "val_interval": SPEEDRUN_EPOCHS, "snapshot_interval": SPEEDRUN_EPOCHS,
    "batch_size": str(AIRBENCH_BATCH), "batch_accumulation": 1, "batch_schedule": "", "mean": "pixel", "crop": "",
    "solver": "nesterov", "lr": f"{SPEEDRUN_LR:.6g}", "momentum": AIRBENCH_MOMENTUM,
    "weight_decay": float(f"{SPEEDRUN_WEIGHT_DECAY:.6g}"), "label_smoothing": 0.2,
    "norm_bias_lr_scale": AIRBENCH_BIAS_SCALER,
    "norm_bias_weight_decay": float(f"{SPEEDRUN_WEIGHT_DECAY / AIRBENCH_BIAS_SCALER:.6g}"),
    "averaging": "lookahead", "average_decay": 0.95, "average_every": 5, "whiten_bias_epochs": 3,
    "lr_policy": "linear", **lr_policy.DEFAULTS["linear"],
    "translate": 2, "flip": "alternating", "rotation": 0.0, "scale": 0.0, "noise": 0.0, "color_jitter": 0.0,
    "tta": "mirror_translate",
}
"""The fields airbench94 sets; the dataset, name, precision and devices stay the user's."""

PRESETS: dict[str, dict[str, Any]] = {
    "speedrun": {"label": "CIFAR-10 speed run (airbench94)", "fields": SPEEDRUN},
}
