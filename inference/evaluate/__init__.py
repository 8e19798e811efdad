"""Evaluations: a job of kind ``evaluation`` runs a model on many images (a
split of its dataset: Evaluate; a text list, a server folder or an
uploaded archive: Classify many; every model of a group on one split:
Compare) and writes a report. ``forms`` checks a request, ``services``
checks the model and queues the job, ``views`` and ``api`` are its pages
and JSON, ``results`` reads the report and rows the job wrote. The work
itself is ``trainer/inference/job.py``."""
