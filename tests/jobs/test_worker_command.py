"""``manage.py worker`` as a person starts it: what it says at start."""

from __future__ import annotations

import os

import pytest

from jobs.management.commands.worker import ROOT_NOTE


@pytest.mark.skipif(os.geteuid() != 0, reason="the note is for a worker started as root")
def test_a_worker_started_as_root_says_what_to_do_in_one_line_instead_of_celerys_warning(worker):
    output = worker.output()
    assert ROOT_NOTE in output
    assert "absolutely not recommended" not in output and "SecurityWarning" not in output
