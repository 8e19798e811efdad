"""Model training in the web app (Django): the New model form and its API,
the training section of a model's job page, the group page that compares a
sweep's runs, and the ``train`` job kind's registration.

It is not the code that trains: it writes a job's params, and a worker runs
``trainer`` on them in the job's own process group. It never imports torch;
what it shares with the trainer (file names, event kinds, step arithmetic)
it imports from the trainer's torch-free modules (``trainer.jobfiles``,
``trainer.eventkinds``, ``trainer.steps``, ``trainer.lr_policy``,
``trainer.catalog``).
"""
