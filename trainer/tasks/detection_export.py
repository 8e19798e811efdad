"""Detection's model archive (``trainer.export``): beside the files every
archive has,

- ``model.onnx`` takes one image, ``image``: float32 3×H×W, normalised as the
  app does (``pixels/255 - mean/255``, see ``detection_training``), of any
  height and width, and gives ``boxes`` (N×4, x1 y1 x2 y2 in that image's
  pixels), ``scores`` (N, best first) and ``labels`` (N, int64 indices into
  ``labels.txt``): the detector in eval mode, its own resize, NMS and score
  floor inside;
- ``detect.py`` (``trainer/archive_detect.py``, copied in) prepares a photo
  as the dataset build did (``prepare.py``, ``trainer/archive_prepare.py``),
  runs the ONNX file and maps the boxes back to the photo's pixels; the
  README shows the few lines it takes.

There is no ``model.pt2``: ``torch.export`` cannot capture torchvision's
detectors. Their post-processing is data-dependent (the proposals and
detections kept by score, ``topk`` of however many remain, NMS), and the
exporter stops at the first guard on such a size ("Could not guard on
data-dependent expression"), with or without dynamic shapes. For the same
reason the ONNX file comes from the TorchScript-based exporter
(``dynamo=False``), as torchvision's own ONNX tests export Faster R-CNN,
RetinaNet, FCOS and SSD: it traces the detector, whose code takes its
tracing paths there (image sizes as tensors in its resize, NMS as ONNX's
``NonMaxSuppression``, the empty case scripted rather than traced), with
``dynamic_axes`` for the height, the width and the number of detections.
The tracer keeps only the branches its example image takes, so the
example is one the detector finds something in (``trace_example``); opset 17.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainer.data import load_split
from trainer.export import ARCHIVE_VERSION, first_line, labels_bytes, mean_files, weights_bytes
from trainer.inference.errors import InferenceError
from trainer.inference.model import Loaded
from trainer.inference.preprocess import FILL_SEED

SCRIPT = Path(__file__).parent.parent / "archive_detect.py"  # the archive's detect.py, run by the tests as it stands
PREPARE = Path(__file__).parent.parent / "archive_prepare.py"  # the archive's prepare.py, which detect.py imports
OPSET = 17
OUTPUTS = ("boxes", "scores", "labels")
NO_PROGRAM = ("not included: torch.export cannot capture torchvision's detectors (their post-processing keeps "
              "a data-dependent number of boxes)")
FILES = ("weights.safetensors", "model.onnx", "labels.txt", "mean.npy", "mean.png", "info.json", "prepare.py",
         "detect.py", "README.md")

README = """\
# {title}

A {classes}-class object detector exported from digitslike (snapshot `{snapshot}`).

| file | what |
| --- | --- |
| `model.onnx` | the detector for any ONNX runtime (below) |
| `weights.safetensors` | the weights alone (torchvision's `{network}`, {classes} classes and the background) |
| `labels.txt` | the class names, one a line |
| `mean.npy`, `mean.png` | what preprocessing subtracts (pixel units, H×W×3) |
| `info.json` | the preprocessing, below |
| `detect.py` | prepares a photo, detects, maps the boxes back to the photo |
| `prepare.py` | how `detect.py` prepares a photo, as the dataset build did |

`model.onnx` takes `image`, one float32 3×H×W image of any height and width, and gives `boxes` (N×4: x1,
y1, x2, y2 in that image's pixels), `scores` (N, best first) and `labels` (N, indices into `labels.txt`).
There is no `model.pt2` (a `torch.export` program): `torch.export` cannot capture torchvision's detectors,
whose post-processing keeps a data-dependent number of boxes.

The model detects in the image it is given and gives its boxes in that image's pixels; it resizes
internally as the detector was trained to, and drops detections scoring under {score_floor} (`score_floor`),
{max_detections} at most. It was trained on the dataset's images as the build prepared them, and does best
on photos prepared the same way (`info.json`): decoded as RGB (turned upright by its EXIF orientation),
{padding}resized to {image_width}×{image_height} in the `{resize_mode}` mode, pixels scaled to [0, 1]
(÷ 255), `mean.npy` ÷ 255 subtracted, laid out as channels × height × width. A box (x1, y1, x2, y2) of that
prepared image lies at ((x1 − shift_x) / scale_x, (y1 − shift_y) / scale_y, …) in the photo: per axis
the resize scales by `scale` and moves by `shift` (the centring of a crop or fill), both of which
`detect.py` works out from `info.json` (`placement`) and undoes (`to_photo`). Run
`python detect.py photo.jpg 0.5` in this folder (numpy, Pillow and onnxruntime) for the detections
scoring at least 0.5: class, score and box in the photo's pixels, one a line. Or, in Python:

```python
import json

import numpy as np
import onnxruntime as ort
from detect import prepare, to_photo

info = json.load(open("info.json", encoding="utf-8"))
labels = open("labels.txt", encoding="utf-8").read().splitlines()
image, where = prepare("photo.jpg", info)  # 3×H×W float32, and where the photo's pixels landed
boxes, scores, classes = ort.InferenceSession("model.onnx").run(None, {{"image": image}})
for box, score, label in zip(to_photo(boxes, where), scores, classes):
    if score >= 0.5:
        print(labels[label], round(float(score), 3), np.round(box, 1).tolist())
```
"""


class OneImage(nn.Module):
    """A torchvision detector as the ONNX file runs it: one normalised image
    C×H×W in; its ``boxes``, ``scores`` and ``labels`` out, the labels as
    class indices (the detector's are ``class + 1``, 0 being the background)."""

    def __init__(self, detector: nn.Module) -> None:
        super().__init__()
        self.detector = detector

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        found = self.detector([image])[0]
        return found["boxes"], found["scores"], found["labels"] - 1


def _heads(detector: nn.Module) -> nn.Module:
    """What holds the detector's score floor and detection count: Faster
    R-CNN's box head, the one-stage detectors themselves."""
    return getattr(detector, "roi_heads", detector)


def info(loaded: Loaded) -> dict[str, Any]:
    """The preprocessing and the model, as ``info.json`` holds them."""
    height, width = loaded.image_size
    pad_width, pad_height = loaded.pad_to or (None, None)
    heads = _heads(loaded.model)
    return {"version": ARCHIVE_VERSION, "task": loaded.task.name, "network": loaded.network,
            "classes": loaded.classes, "snapshot": loaded.snapshot, "channels": loaded.channels, "pil_mode": "RGB",
            "image_height": height, "image_width": width, "resize_mode": loaded.resize_mode,
            "pad_width": pad_width, "pad_height": pad_height, "mean": loaded.mean_mode, "scale": 1 / 255,
            "fill_seed": FILL_SEED, "layout": "CHW", "input": "image", "outputs": list(OUTPUTS),
            "box_format": "xyxy, pixels of the input image", "score_floor": float(heads.score_thresh),
            "max_detections": int(heads.detections_per_img), "model.pt2": NO_PROGRAM}


TRACE_IMAGES = 8  # training images tried as the trace's example


def trace_example(loaded: Loaded, model: nn.Module) -> torch.Tensor:
    """The image the exporter traces the detector on: of a noise image and
    the first training images (prepared as training prepared them), the one
    the detector finds the most in. The tracer records only the branches
    its example takes: a trained detector that found nothing in noise (its
    proposal network kept no box) gave a graph without the reshape of the
    box head's per-class boxes, which then failed in onnxruntime on every
    real photo."""
    candidates = [torch.rand(loaded.channels, *loaded.input_size, generator=torch.Generator().manual_seed(0)) - 0.5]
    with contextlib.suppress(OSError, ValueError):  # the dataset gone: the noise alone
        split = load_split(loaded.dataset_dir, "train", TRACE_IMAGES * loaded.channels * math.prod(loaded.image_size))
        if split is not None:
            candidates += list(loaded.normalizer.to("cpu")(split.head(TRACE_IMAGES)))
    with torch.no_grad():
        return max(candidates, key=lambda image: len(model(image)[0]))


def onnx_bytes(loaded: Loaded, wrapped: type[nn.Module] = OneImage, outputs: tuple[str, ...] = OUTPUTS) -> bytes:
    """The detector as one ONNX file (see the module's docstring), traced on
    the CPU, as ``wrapped`` runs it (``OneImage``; instance segmentation's
    adds the masks), its ``outputs`` named."""
    model = wrapped(loaded.model.to("cpu")).eval()
    example = trace_example(loaded, model)
    out = io.BytesIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")  # the tracer's warnings of the Python values it records
            torch.onnx.export(model, (example,), out, dynamo=False, opset_version=OPSET, input_names=["image"],
                              output_names=list(outputs),
                              dynamic_axes={"image": {1: "height", 2: "width"},
                                            **{name: {0: "detections"} for name in outputs}})
    except Exception as exc:  # the exporter raises many kinds
        raise InferenceError(f"The detector cannot be exported as ONNX: {first_line(exc)}") from None
    finally:
        loaded.model.to(loaded.device)
    return out.getvalue()


def archive_files(loaded: Loaded) -> dict[str, bytes]:
    """The archive's files by name."""
    description = info(loaded)
    padding = (f"padded at the right and bottom with black to {description['pad_width']}×"
               f"{description['pad_height']}, " if loaded.pad_to else "")
    readme = README.format(**{**description, "title": loaded.network["name"], "network": loaded.network["name"],
                              "classes": len(loaded.classes), "padding": padding})
    return {
        "weights.safetensors": weights_bytes(loaded.model),
        "model.onnx": onnx_bytes(loaded),
        "labels.txt": labels_bytes(loaded),
        **mean_files(loaded),
        "info.json": json.dumps(description, indent=1, ensure_ascii=False).encode(),
        "prepare.py": PREPARE.read_bytes(),
        "detect.py": SCRIPT.read_bytes(),
        "README.md": readme.encode(),
    }
