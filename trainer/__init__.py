"""The job-side runtime: plain Python and PyTorch, never Django.

Code here runs inside a job's process group, started by a worker, and talks to
the rest of the app only through files in the job folder (see ``events``).
It trains (``train``), builds datasets and checks devices; the pages and API
of model training are the ``training`` app, not this package.

A few modules import neither torch nor Django so that the web app shares
them instead of repeating them: ``jobfiles`` (the job folder's file names),
``eventkinds`` (the event vocabulary), ``steps`` (images to batches and
steps), ``linetail`` (reading a growing file), ``lr_policy`` and ``catalog``.
"""
