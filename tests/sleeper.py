"""The process of the test-only ``sleep`` job kind: ``python -m tests.sleeper config.json``.

Config: ``steps`` (count), ``step_seconds``, and ``exit_code`` (to fail on
purpose, after writing an ``error`` event), ``crash`` (to fail as an
unexpected error does: a traceback through this file and the standard
library, and no ``error`` event); ``ignore_term`` makes it ignore
SIGTERM so tests can check the SIGKILL after the grace period;
``hang_after`` makes its first run stop saying anything after that many
steps (a stuck process), until it is killed. Its ``started`` event carries
its pid, the names in its environment and its thread count (``threads``:
``OMP_NUM_THREADS``).
"""

import json
import os
import signal
import sys
import time
from pathlib import Path

from trainer import eventkinds, eventlog


def main(config_path: str) -> int:
    job_dir = Path(config_path).parent
    config = json.loads(Path(config_path).read_text())
    if config.get("ignore_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    eventlog.append(job_dir, "started", {"pid": os.getpid(), "t": time.time(), "environment": sorted(os.environ),
                                        "threads": os.environ.get("OMP_NUM_THREADS")})
    steps = int(config.get("steps", 5))
    for step in range(1, steps + 1):
        time.sleep(float(config.get("step_seconds", 0.1)))
        print(f"step {step} of {steps}", flush=True)
        eventlog.append(job_dir, eventkinds.PROGRESS, {"progress": step / steps, "step": step})
        if step == config.get("hang_after") and not (job_dir / "hung").exists():
            (job_dir / "hung").touch()
            time.sleep(3600)
    if config.get("crash"):
        json.loads("{not json")
    code = int(config.get("exit_code", 0))
    if code:
        eventlog.append(job_dir, eventkinds.ERROR, {"message": f"failed on purpose with code {code}"})
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
