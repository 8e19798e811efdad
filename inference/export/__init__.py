"""Model archives: an export job of one snapshot of a model writes a zip that
runs without this app (weights, a ``torch.export`` program, ONNX, the
labels and the preprocessing). ``services`` makes or reuses the job,
``views`` and ``api`` are "Download model archive" and the download. The
work itself is ``trainer/export_job.py``."""
