"""A quick job kind for the integration tests: sleeps in steps and reports
progress, with no PyTorch import to wait for. Registered only when the test
suite lists this module in JOB_KINDS_MODULES."""

from jobs.kinds import JobKind, python_module, register

register(JobKind("sleep", "Sleep (tests)", "checks", python_module("tests.sleeper")))
