"""Semantic segmentation's model archive (``trainer.export``): beside the
files every archive has,

- ``model.pt2``: the network as a ``torch.export`` program, any batch size,
  the network input's height and width (after the run's crop): one logit a
  class a pixel, N×K×h×w;
- ``model.onnx``: the same program through PyTorch's ONNX exporter
  (``dynamo=True``), input ``image``, output ``logits``: the U-Net and
  torchvision's networks are plain convolutions, pooling and resizes, which
  ``torch.export`` captures whole;
- ``colours.txt``: each class's colour as the dataset's pages draw it, in
  the import's colour map format (``r g b name`` a line), so a mask can be
  drawn, or a dataset of label images in those colours imported again;
- ``segment.py`` (``trainer/archive_segment.py``) with ``prepare.py``
  (``trainer/archive_prepare.py``) segments a photo as the app's Segment one
  does (prepared as the build did, the mask mapped back to the photo's own
  pixels); the README shows the few lines it takes.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import torch

from trainer import jobfiles
from trainer.export import ARCHIVE_VERSION, labels_bytes, mean_files, weights_bytes
from trainer.inference.model import Loaded
from trainer.inference.preprocess import FILL_SEED
from trainer.segmentation.labels import IGNORE

from .classification_export import onnx_bytes, program

SCRIPT = Path(__file__).parent.parent / "archive_segment.py"  # the archive's segment.py, run by the tests as it stands
PREPARE = Path(__file__).parent.parent / "archive_prepare.py"  # the archive's prepare.py, which segment.py imports
FILES = ("weights.safetensors", "model.pt2", "model.onnx", "labels.txt", "colours.txt", "mean.npy", "mean.png",
         "info.json", "prepare.py", "segment.py", "README.md")
GREY = (128, 128, 128)  # a class past the dataset's colours, as its pages draw it

README = """\
# {title}

A {classes}-class semantic segmenter exported from digitslike (snapshot `{snapshot}`): a class for every pixel.

| file | what |
| --- | --- |
| `model.onnx` | the network for any ONNX runtime: input `image`, output `logits` (below) |
| `model.pt2` | the same as a PyTorch program: `torch.export.load("model.pt2").module()` |
| `weights.safetensors` | the weights alone |
| `labels.txt` | the class names, one a line: a pixel's class is the index of its largest logit |
| `colours.txt` | each class's colour (`r g b name` a line, the import's colour map format) |
| `mean.npy`, `mean.png` | what preprocessing subtracts (pixel units, H×W×C) |
| `info.json` | the preprocessing, below |
| `segment.py`, `prepare.py` | prepare a photo, segment it, map the mask back to the photo |

`model.onnx` takes `image`, float32 N×{channels}×{height}×{width}, and gives `logits`,
N×{classes}×{height}×{width}: a pixel's class is the index of its largest logit.

Preprocessing (`info.json`, as the dataset build and the run prepared their images): decode as {pil_mode}
(turned upright by its EXIF orientation), {padding}resize to {image_width}×{image_height} in the
`{resize_mode}` mode, scale pixels to [0, 1] (÷ 255), subtract `mean.npy` ÷ 255, take the centred
{width}×{height} window, lay out as channels × height × width. A pixel (x, y) of the photo lies at
(x + 0.5) × scale + shift per axis in the prepared image (`prepare.placement`); `segment.py` maps the
network's classes back so that the mask is the photo's own size, {ignore} where the network saw no pixel.
Run `python segment.py photo.jpg mask.png` in this folder (numpy, Pillow and onnxruntime) for each class's
pixels and the mask as a grayscale PNG of class indices. Or, in Python:

```python
import json

import numpy as np
import onnxruntime as ort
from segment import segment

info = json.load(open("info.json", encoding="utf-8"))
labels = open("labels.txt", encoding="utf-8").read().splitlines()
mask = segment("photo.jpg", info, ort.InferenceSession("model.onnx"))  # H×W class indices, {ignore}: unseen
for index, pixels in enumerate(np.bincount(mask.ravel(), minlength=len(labels))[:len(labels)]):
    print(labels[index], int(pixels))
```
"""


def colours(loaded: Loaded) -> list[tuple[int, int, int]]:
    """Each class's colour, from the dataset's manifest (grey past its colours)."""
    manifest = json.loads((loaded.dataset_dir / jobfiles.MANIFEST).read_text(encoding="utf-8"))
    given = (manifest.get("labelling") or {}).get("colours") or []
    return [tuple(given[index]) if index < len(given) else GREY for index in range(len(loaded.classes))]


def info(loaded: Loaded) -> dict[str, Any]:
    """The preprocessing and the model, as ``info.json`` holds them."""
    (image_height, image_width), (height, width) = loaded.image_size, loaded.input_size
    pad_width, pad_height = loaded.pad_to or (None, None)
    return {"version": ARCHIVE_VERSION, "task": loaded.task.name, "network": loaded.network,
            "classes": loaded.classes, "colours": [list(colour) for colour in colours(loaded)],
            "snapshot": loaded.snapshot, "channels": loaded.channels,
            "pil_mode": "L" if loaded.channels == 1 else "RGB", "image_height": image_height,
            "image_width": image_width, "resize_mode": loaded.resize_mode, "pad_width": pad_width,
            "pad_height": pad_height, "height": height, "width": width, "crop": loaded.normalizer.crop,
            "mean": loaded.mean_mode, "scale": 1 / 255, "fill_seed": FILL_SEED, "layout": "NCHW",
            "input": "image", "output": "logits", "ignore": IGNORE}


def archive_files(loaded: Loaded) -> dict[str, bytes]:
    """The archive's files by name."""
    exported = program(loaded)
    buffer = io.BytesIO()
    torch.export.save(exported, buffer)
    description = info(loaded)
    padding = (f"pad at the right and bottom with black to {description['pad_width']}×"
               f"{description['pad_height']}, " if loaded.pad_to else "")
    readme = README.format(**{**description, "title": loaded.network.get("name") or loaded.network.get("source"),
                              "classes": len(loaded.classes), "padding": padding})
    colour_map = "".join(f"{r} {g} {b} {name}\n" for (r, g, b), name in zip(colours(loaded), loaded.classes,
                                                                           strict=True))
    return {
        "weights.safetensors": weights_bytes(loaded.model),
        "model.pt2": buffer.getvalue(),
        "model.onnx": onnx_bytes(exported),
        "labels.txt": labels_bytes(loaded),
        "colours.txt": colour_map.encode(),
        **mean_files(loaded),
        "info.json": json.dumps(description, indent=1, ensure_ascii=False).encode(),
        "prepare.py": PREPARE.read_bytes(),
        "segment.py": SCRIPT.read_bytes(),
        "README.md": readme.encode(),
    }
