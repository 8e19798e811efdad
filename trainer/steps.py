"""How a training run's images become batches and steps, for the trainer's
loader and for the New model form's preview alike (no torch, no Django).

Training shuffles, then cuts the images to a multiple of the number of
processes so that every process has as many (DDP steps together), and drops
a last, incomplete batch; evaluation keeps every image once over all the
processes, whose shares may differ by one.
"""

from __future__ import annotations

from . import lr_policy


def shard_size(images: int, rank: int, world_size: int, even: bool) -> int:
    """The images process ``rank`` of ``world_size`` takes (positions
    ``rank::world_size``); ``even`` first cuts the tail to a multiple of
    ``world_size``."""
    if even:
        images -= images % world_size
    return len(range(rank, images, world_size))


def batch_count(samples: int, batch_size: int, drop_last: bool) -> int:
    """Batches of ``samples``: whole ones only with ``drop_last``."""
    return samples // batch_size if drop_last else -(-samples // batch_size)


def total_steps(train_images: int, batch_size: int, world_size: int, epochs: int, schedule: list[list[int]]) -> int:
    """The steps of a whole run: per epoch, each process's even share of the
    training images in whole batches of that epoch's size (see
    ``lr_policy.batch_size_at``)."""
    per_process = shard_size(train_images, 0, world_size, even=True)
    return sum(batch_count(per_process, lr_policy.batch_size_at(schedule, batch_size, epoch), drop_last=True)
               for epoch in range(epochs))
