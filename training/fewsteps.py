"""The warning of a run too short to learn much: with the defaults a small
dataset gets a handful of steps (398 photos, a quarter kept for validation,
2 epochs of 64: 8 steps), and the model page then shows a curve of a few
points with nothing said. The New model form's preview, its page and the
API say so, with a batch size and a number of epochs that give enough."""

from __future__ import annotations

from trainer.steps import total_steps

# The fewest steps a run is not warned of.
MIN_STEPS = 100


def warning(train_images: int, batch_size: int, world_size: int, epochs: int, schedule: list[list[int]]) -> str:
    """The warning for a run of these settings, or "" when it has steps enough."""
    steps = total_steps(train_images, batch_size, world_size, epochs, schedule)
    if steps >= MIN_STEPS:
        return ""

    def enough(size: int, count: int) -> bool:
        return total_steps(train_images, size, world_size, count, schedule) >= MIN_STEPS

    smaller = next((size for size in range(batch_size - 1, 0, -1) if enough(size, epochs)), None)
    # After the schedule's last change every epoch has as many steps, and at
    # least one, so MIN_STEPS more epochs always do.
    longer = next((count for count in range(epochs + 1, epochs + MIN_STEPS + 1) if enough(batch_size, count)), None)
    ways = ([f"a batch size of {smaller} or less"] if smaller else []) + ([f"{longer} epochs"] if longer else [])
    advice = f": {', or '.join(ways)}, makes at least {MIN_STEPS}" if ways else ""
    return (f"This run takes only {steps} steps ({train_images} training images, batch size {batch_size}, "
            f"{epochs} epochs), too few to learn much{advice}.")
