"""Instance segmentation's model archive (``trainer.export``): detection's
(``detection_export``: the same ONNX export by the TorchScript-based
exporter, traced on an image the model finds something in, the same
``info.json`` and ``detect.py``), its ONNX file giving each detection's
mask beside its box, score and label:

- ``model.onnx`` takes ``image`` (float32 3×H×W, normalised as the app
  does) and gives ``boxes``, ``scores``, ``labels`` and ``masks``: N×1×H×W,
  each detection's probability a pixel of that image (Mask R-CNN's masks
  pasted into their boxes);
- ``instances.py`` (``trainer/archive_instances.py``) prepares a photo,
  runs the model and takes the boxes and masks back to the photo's pixels,
  as the app's Detect one does.

There is no ``model.pt2``, for detection's reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from trainer.export import labels_bytes, mean_files, weights_bytes
from trainer.inference.model import Loaded

from .detection_export import NO_PROGRAM, OUTPUTS, PREPARE, info, onnx_bytes
from .detection_export import SCRIPT as DETECT_SCRIPT

SCRIPT = Path(__file__).parent.parent / "archive_instances.py"  # the archive's instances.py
FILES = ("weights.safetensors", "model.onnx", "labels.txt", "mean.npy", "mean.png", "info.json", "prepare.py",
         "detect.py", "instances.py", "README.md")
MASK_OUTPUTS = (*OUTPUTS, "masks")

README = """\
# {title}

A {classes}-class instance segmentation model (Mask R-CNN) exported from digitslike (snapshot `{snapshot}`).

| file | what |
| --- | --- |
| `model.onnx` | the model for any ONNX runtime (below) |
| `weights.safetensors` | the weights alone (`{network}`, {classes} classes and the background) |
| `labels.txt` | the class names, one a line |
| `mean.npy`, `mean.png` | what preprocessing subtracts (pixel units, H×W×3) |
| `info.json` | the preprocessing, below |
| `instances.py` | prepares a photo, finds its objects, takes their boxes and masks back to the photo |
| `detect.py`, `prepare.py` | how `instances.py` prepares a photo (as the dataset build did) and maps boxes back |

`model.onnx` takes `image`, one float32 3×H×W image of any height and width, and gives `boxes` (N×4: x1,
y1, x2, y2 in that image's pixels), `scores` (N, best first), `labels` (N, indices into `labels.txt`) and
`masks` (N×1×H×W: each object's probability a pixel of that image; at least 0.5 is the object).
There is no `model.pt2` (a `torch.export` program): {no_program}.

The model drops detections scoring under {score_floor}, {max_detections} at most. It does best on photos
prepared as the dataset's images were (`info.json`): decoded as RGB (turned upright by its EXIF
orientation), {padding}resized to {image_width}×{image_height} in the `{resize_mode}` mode, pixels scaled
to [0, 1] (÷ 255), `mean.npy` ÷ 255 subtracted, laid out as channels × height × width. Run
`python instances.py photo.jpg 0.5 objects.png` in this folder (numpy, Pillow and onnxruntime) for the
objects scoring at least 0.5 (class, score, box and mask pixels in the photo, one a line) and their map
(each pixel its object's place in the list plus one). Or, in Python:

```python
import json

import onnxruntime as ort
from instances import find

info = json.load(open("info.json", encoding="utf-8"))
labels = open("labels.txt", encoding="utf-8").read().splitlines()
found, objects = find("photo.jpg", info, ort.InferenceSession("model.onnx"), min_score=0.5)
for number, (label, score, box) in enumerate(found, start=1):
    print(labels[label], round(float(score), 3), box.round(1).tolist(), int((objects == number).sum()))
```
"""


class OneImageWithMasks(nn.Module):
    """Mask R-CNN as the ONNX file runs it: one normalised image C×H×W in;
    its ``boxes``, ``scores``, ``labels`` (class indices) and ``masks`` out."""

    def __init__(self, detector: nn.Module) -> None:
        super().__init__()
        self.detector = detector

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, ...]:
        found = self.detector([image])[0]
        return found["boxes"], found["scores"], found["labels"] - 1, found["masks"]


def archive_files(loaded: Loaded) -> dict[str, bytes]:
    """The archive's files by name."""
    description = {**info(loaded), "outputs": list(MASK_OUTPUTS)}
    padding = (f"padded at the right and bottom with black to {description['pad_width']}×"
               f"{description['pad_height']}, " if loaded.pad_to else "")
    readme = README.format(**{**description, "title": loaded.network["name"], "network": loaded.network["name"],
                              "classes": len(loaded.classes), "padding": padding,
                              "no_program": NO_PROGRAM.removeprefix("not included: ")})
    return {
        "weights.safetensors": weights_bytes(loaded.model),
        "model.onnx": onnx_bytes(loaded, OneImageWithMasks, MASK_OUTPUTS),
        "labels.txt": labels_bytes(loaded),
        **mean_files(loaded),
        "info.json": json.dumps(description, indent=1, ensure_ascii=False).encode(),
        "prepare.py": PREPARE.read_bytes(),
        "detect.py": DETECT_SCRIPT.read_bytes(),
        "instances.py": SCRIPT.read_bytes(),
        "README.md": readme.encode(),
    }
