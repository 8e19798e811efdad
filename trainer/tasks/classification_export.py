"""Classification's model archive (``trainer.export``): beside the files
every archive has,

- ``model.pt2``: the network as a ``torch.export`` program, loaded with
  ``torch.export.load(path).module()`` with no code of ours. ``torch.export``
  rather than TorchScript: ``torch.jit.trace`` fails its own checks on the
  ViT (its class token), TorchScript is deprecated, and ``torch.export``
  captures every standard network, with a dynamic batch size;
- ``model.onnx`` is the same program through PyTorch's current ONNX exporter
  (``dynamo=True``, which needs ``onnxscript``). The older TorchScript-based
  exporter is deprecated and cannot export AlexNet's adaptive pooling at
  small image sizes;
- the README's code classifies an image with onnxruntime exactly as the app
  does (``trainer/archive_classify.py``, copied in), beside ``prepare.py``
  (``trainer/archive_prepare.py``), which it imports to convert the image.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import torch

from trainer.export import ARCHIVE_VERSION, first_line, labels_bytes, mean_files, weights_bytes
from trainer.inference.errors import InferenceError
from trainer.inference.model import Loaded
from trainer.inference.preprocess import FILL_SEED

EXAMPLE = Path(__file__).parent.parent / "archive_classify.py"  # the README's code, run by the tests as it stands
PREPARE = Path(__file__).parent.parent / "archive_prepare.py"  # the archive's prepare.py, which the code imports

MAX_BATCH = 4096
FILES = ("weights.safetensors", "model.pt2", "model.onnx", "labels.txt", "mean.npy", "mean.png", "info.json",
         "prepare.py", "README.md")

README = """\
# {title}

A {classes}-class image classifier exported from digitslike (snapshot `{snapshot}`).

| file | what |
| --- | --- |
| `model.onnx` | the network for any ONNX runtime: input `image`, float32 N×{channels}×{height}×{width}; output `logits` |
| `model.pt2` | the same as a PyTorch program: `torch.export.load("model.pt2").module()` |
| `weights.safetensors` | the weights alone |
| `labels.txt` | the class names, one a line, in output order |
| `mean.npy`, `mean.png` | what preprocessing subtracts (pixel units, H×W×C) |
| `info.json` | the preprocessing, below |
| `prepare.py` | how an image becomes the model's channels (the code below imports it) |

Preprocessing (`info.json`): decode as {mode} (a JPEG at the smallest scale that still covers what the
resize makes of it, turned upright by its EXIF orientation), resize to {image_width}×{image_height} in the
`{resize_mode}` mode, scale pixels to [0, 1] (÷ 255), subtract `mean.npy` ÷ 255, take the centred
{width}×{height} window, lay out as channels × height × width. The code below does exactly that, as the
app does; save it as `classify.py` in this folder and run `python classify.py photo.jpg` (it needs numpy,
Pillow and onnxruntime) for the top five classes with their probabilities.

```python
{code}```
"""


def info(loaded: Loaded) -> dict[str, Any]:
    """The preprocessing and the model, as ``info.json`` holds them."""
    (image_height, image_width), (height, width) = loaded.image_size, loaded.input_size
    return {"version": ARCHIVE_VERSION, "task": loaded.task.name, "network": loaded.network,
            "classes": loaded.classes, "snapshot": loaded.snapshot, "channels": loaded.channels,
            "pil_mode": "L" if loaded.channels == 1 else "RGB", "image_height": image_height,
            "image_width": image_width, "resize_mode": loaded.resize_mode, "height": height, "width": width,
            "crop": loaded.normalizer.crop, "mean": loaded.mean_mode, "scale": 1 / 255, "fill_seed": FILL_SEED,
            "layout": "NCHW", "input": "image", "output": "logits"}


def program(loaded: Loaded) -> torch.export.ExportedProgram:
    """The network as a ``torch.export`` program on the CPU, any batch size."""
    model = loaded.model.to("cpu")
    example = torch.zeros(2, loaded.channels, *loaded.input_size)
    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    try:
        return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
    except Exception as exc:  # a user's network may do what torch.export cannot capture
        raise InferenceError(f"The network cannot be exported as a program: {first_line(exc)}") from None
    finally:
        loaded.model.to(loaded.device)


def onnx_bytes(exported: torch.export.ExportedProgram) -> bytes:
    """``exported`` as one ONNX file (weights inside), input ``image``, output ``logits``."""
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
        onnx_program = torch.onnx.export(exported, dynamo=True, input_names=["image"], output_names=["logits"],
                                         external_data=False)
        path = Path(folder) / "model.onnx"
        onnx_program.save(path, external_data=False)
        return path.read_bytes()


def archive_files(loaded: Loaded) -> dict[str, bytes]:
    """The archive's files by name."""
    exported = program(loaded)
    buffer = io.BytesIO()
    torch.export.save(exported, buffer)
    description = info(loaded)
    readme = README.format(**{**description, "title": loaded.network.get("name") or loaded.network.get("source"),
                              "classes": len(loaded.classes), "mode": description["pil_mode"],
                              "code": EXAMPLE.read_text(encoding="utf-8")})
    return {
        "weights.safetensors": weights_bytes(loaded.model),
        "model.pt2": buffer.getvalue(),
        "model.onnx": onnx_bytes(exported),
        "labels.txt": labels_bytes(loaded),
        **mean_files(loaded),
        "info.json": json.dumps(description, indent=1, ensure_ascii=False).encode(),
        "prepare.py": PREPARE.read_bytes(),
        "README.md": readme.encode(),
    }
