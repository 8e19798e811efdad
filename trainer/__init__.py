"""The job-side runtime: plain Python and PyTorch, never Django.

Code here runs inside a job's process group, started by a worker, and talks to
the rest of the app only through files in the job folder (see ``events``).
"""
