"""Model archives: an export job of one snapshot of a model writes a zip that
runs without this app (weights, ONNX, a ``torch.export`` program where
the model's task can make one, the labels and the preprocessing: what the
task's archive holds, ``trainer.export``). ``services`` makes or reuses the job,
``views`` and ``api`` are "Download model archive" and the download. The
work itself is ``trainer/export_job.py``."""
