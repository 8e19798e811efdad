"""How a training process ends: see ``trainer.distributed.exit_process``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A C++ thread still working when the process ends, as gloo's communication
# workers may be after the last collective: a torch operation releases the GIL
# and takes it back when it returns. A normal interpreter exit aborts here
# ("terminate called without an active exception") nearly every time.
BUSY_THREAD_AT_EXIT = """
import sys, threading, time, torch
from trainer.distributed import exit_process
matrix = torch.randn(300, 300)
def work():
    while True:
        matrix @ matrix
threading.Thread(target=work, daemon=True).start()
time.sleep(0.2)
print("trained", end="")
exit_process(int(sys.argv[1]))
"""


def test_a_process_ends_cleanly_while_torch_threads_still_work():
    for code in (0, 1, 0):
        ended = subprocess.run([sys.executable, "-c", BUSY_THREAD_AT_EXIT, str(code)], cwd=ROOT,
                               capture_output=True, text=True, timeout=120)
        assert ended.returncode == code, ended.stderr
        assert "terminate called" not in ended.stderr
        assert ended.stdout == "trained", "buffered output is flushed before the process ends"
