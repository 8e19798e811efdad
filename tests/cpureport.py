"""Where the suite's time goes: with ``TEST_CPU_REPORT=<file>`` set, each
test appends a line of JSON to that file with its wall time and the CPU
seconds it cost, its setup and teardown included (a module's fixtures are
torn down with its last test). ``children`` counts the processes the test
started and waited for, and theirs in turn (a worker's training jobs, a
browser's helpers), once they have ended: the suite is bound by CPU, so
this, not the wall time of a test sharing the cores, says what it costs.
``scripts/test_cpu_table.py`` sums the lines per file.

Several pytest-xdist processes append to the one file: each line is one
``write`` of a file opened for appending, so lines do not interleave."""

from __future__ import annotations

import json
import os
import resource
import time

import pytest

REPORT = os.environ.get("TEST_CPU_REPORT")


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not REPORT:
        yield
        return
    wall, own, children = time.monotonic(), _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    yield
    line = {"test": item.nodeid, "file": item.nodeid.split("::")[0],
            "database": "postgresql" if os.environ.get("DATABASE_URL") else "sqlite",
            "wall": round(time.monotonic() - wall, 3), "self": round(_cpu(resource.RUSAGE_SELF) - own, 3),
            "children": round(_cpu(resource.RUSAGE_CHILDREN) - children, 3)}
    with open(REPORT, "a") as handle:
        handle.write(json.dumps(line) + "\n")
