"""The environment of processes that may run users' code: job processes
(``jobs.runner``) and the model server (``digitslike.launch``). They get
the variables of their parent's environment on an allow list, nothing
else whatever its name, since a secret (the secret key, the database's
and Redis's addresses with their passwords, cloud and API keys) may be
called anything. Torch-free and Django-free: the worker and the launcher
both read it."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterable, Mapping

PR_SET_DUMPABLE = 4  # linux/prctl.h

# The system's, and the project's own settings the trainer reads.
NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ", "TMPDIR", "LD_LIBRARY_PATH",
    "WORKER_HOST", "TRAIN_DATA_BUDGET", "CLASSIFY_MAX_PIXELS",
})
# The locale's, and the GPU and thread libraries'.
PREFIXES = ("LC_", "CUDA_", "NCCL_", "GLOO_", "OMP_", "MKL_", "OPENBLAS_", "NVIDIA_", "TORCH_", "PYTORCH_", "TRITON_")
# What the model server reads beyond a job's (``trainer.modelserver.arguments``);
# its Redis address, prefix and data folder are on its command line.
MODEL_SERVER_NAMES = frozenset({"MODEL_SERVER_DEVICE", "MODEL_SERVER_MAX_MODELS", "MODEL_SERVER_IDLE_SECONDS",
                                "WORKER_DEAD_AFTER_SECONDS"})


def allowed(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """The variables of ``environ`` on the allow list, and the ``extra`` names."""
    names = NAMES | set(extra)
    return {name: value for name, value in environ.items() if name in names or name.startswith(PREFIXES)}


def keep_private() -> None:
    """Make this process's memory and environment unreadable to the same
    user's other processes (Linux: not dumpable, so its ``/proc/<pid>/environ``
    and ``mem`` belong to root and it cannot be traced): the processes that
    hold the secrets (web, worker, launcher) call it, since job processes,
    which may run users' code, run as the same user. Root's processes can
    read it all the same; a program started from it (``execve``) is dumpable
    again. Elsewhere than on Linux it does nothing."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")
