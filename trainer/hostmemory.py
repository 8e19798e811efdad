"""The C allocator's settings for a process that runs a network on the CPU.

PyTorch's CPU tensors come from ``malloc``. glibc serves a block of a few
megabytes (a batch's activations) either from its heap or from a fresh
``mmap``, and decides by a threshold that moves with what was freed before;
it also hands the top of its heap back to the kernel once more than twice
that threshold is free there. Which way a process goes depends on the order
of its first allocations: some processes reuse their memory every step,
others map, touch (a page fault and a zeroed page for every 4 KiB) and unmap
it every step. On the CPU that was 5% to 15% of a small network's training
time, and it differed from one run of the same job to the next.

``keep_freed_memory`` fixes both thresholds: blocks up to 32 MiB (glibc's
largest threshold) come from the heap, and freed memory stays with the
process up to 1 GiB, so the steps after the first reuse their pages. A
training process holds its peak memory anyway, for the next step.
"""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 * 1024**2  # glibc refuses more on 64-bit (HEAP_MAX_SIZE / 2)
TRIM_THRESHOLD_BYTES = 1024**3


def keep_freed_memory() -> bool:
    """Set the thresholds; False where the C library has no glibc ``mallopt``
    (musl, macOS), whose allocators keep their own defaults."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
