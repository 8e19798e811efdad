"""The files an evaluation job (``trainer/inference/job.py``) writes in its
job folder, named once for the job and the web app that reads them (this
module imports nothing, so the web process stays free of torch)."""

OUTPUT = "evaluation"  # the folder; built as OUTPUT + ".partial" and moved into place
RESULTS = "results.json"  # {"rows": [...]}: one row per image
REPORT = "report.json"  # accuracies, per-class figures, confusion matrix, mistakes, top-N
CSV = "results.csv"
IMAGES = "images"  # the packed store's split name of the images as the network got them (file sources)
