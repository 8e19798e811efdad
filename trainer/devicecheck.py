"""Device check job: ``python -m trainer.devicecheck config.json``.

Runs dense matrix multiplications on the job's device for the configured
time and reports the measured rate, so a user can see that a worker and its
GPUs (or CPU) work and how fast they are. Config: ``{"seconds": float,
"size": int}`` and the leased ``devices``. Emits ``progress`` events and a
final ``result`` event; a leased GPU it cannot use is an ``error`` event.
"""

import sys
import time

import torch

from . import eventkinds, eventlog
from .distributed import DeviceError, device_for
from .jobmain import finished, job_config


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # host-device sync: only at reporting points


def main(config_path: str) -> int:
    job_dir, config = job_config(config_path)
    seconds, size = float(config["seconds"]), int(config["size"])
    if seconds <= 0 or size <= 0:
        eventlog.append(job_dir, eventkinds.ERROR, {"message": f"seconds and size must be positive, got {seconds} and {size}"})
        return 1
    try:
        device = device_for(config.get("devices", []), 0)
    except DeviceError as exc:
        eventlog.append(job_dir, eventkinds.ERROR, {"message": str(exc)})
        print(exc, file=sys.stderr, flush=True)
        return 1
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    print(f"device check on {name}: {size}x{size} matmuls for {seconds:g} s", flush=True)
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    flops_per_matmul = 2.0 * size**3
    torch.mm(a, b)  # warm-up, untimed: CUDA's and cuBLAS's lazy start
    _sync(device)
    start = last_report = time.perf_counter()
    matmuls = 0
    while (elapsed := time.perf_counter() - start) < seconds:
        torch.mm(a, b)
        matmuls += 1
        if time.perf_counter() - last_report >= 0.5:
            _sync(device)
            last_report = time.perf_counter()
            rate = flops_per_matmul * matmuls / (last_report - start) / 1e9
            eventlog.append(job_dir, eventkinds.PROGRESS, {"progress": min(elapsed / seconds, 1.0), "gflops": rate})
            print(f"{elapsed:6.1f} s  {rate:10.1f} GFLOP/s", flush=True)
    _sync(device)
    total = time.perf_counter() - start
    gflops = flops_per_matmul * matmuls / total / 1e9
    return finished(job_dir, {"device": name, "gflops": gflops, "matmuls": matmuls, "seconds": total},
                    f"{matmuls} matmuls, {gflops:.1f} GFLOP/s on {name}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
