"""The trainer's side of a task: classification's loss and metrics, checked
against a plain computation, in one process and summed over two (gloo)."""

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from trainer import eventkinds
from trainer.tasks import task_of
from trainer.tasks.training import training_for


def plain(logits: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    top = logits.topk(min(5, logits.shape[1]), dim=1).indices == labels[:, None]
    return {"loss": F.cross_entropy(logits, labels).item(), "top1": top[:, 0].float().mean().item(),
            "top5": top.any(dim=1).float().mean().item()}


def batches(seed: int, classes: int, sizes: tuple[int, ...]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, classes, generator=generator), torch.randint(0, classes, (n,), generator=generator))
            for n in sizes]


@pytest.mark.parametrize("classes", [2, 5, 12])
def test_classification_metrics_match_a_plain_computation_over_uneven_batches(classes):
    training = training_for(task_of({}), classes, {})
    evaluation = training.evaluation(torch.device("cpu"))
    given = batches(classes, classes, (7, 64, 1, 30))
    for logits, labels in given:
        evaluation.update(logits, labels)
    found = evaluation.compute()
    expected = plain(torch.cat([x for x, _ in given]), torch.cat([y for _, y in given]))
    assert found == pytest.approx(expected, abs=1e-6)
    assert set(eventkinds.val(1, 0.5, found)) >= set(task_of({}).series_fields()[eventkinds.VAL].values())
    assert training.describe(found).startswith(f"loss {found['loss']:.4f}, top-1 ")


def test_the_training_loss_smooths_labels_as_asked():
    logits, labels = batches(0, 4, (16,))[0]
    smoothed = training_for(task_of({}), 4, {"label_smoothing": 0.1}).criterion()(logits, labels)
    assert smoothed.item() == pytest.approx(F.cross_entropy(logits, labels, label_smoothing=0.1).item())


def _evaluate_on_rank(rank: int, port: int, shards: list, out: dict) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        evaluation = training_for(task_of({}), 10, {}).evaluation(torch.device("cpu"))
        for logits, labels in shards[rank]:
            evaluation.update(logits, labels)
        out[rank] = evaluation.compute()
    finally:
        dist.destroy_process_group()


def test_two_processes_with_uneven_shards_both_get_the_metrics_of_the_whole_split():
    shards = [batches(1, 10, (32, 32, 5)), batches(2, 10, (32,))]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.Manager().dict()
    mp.spawn(_evaluate_on_rank, args=(port, shards, out), nprocs=2)
    every = shards[0] + shards[1]
    expected = plain(torch.cat([x for x, _ in every]), torch.cat([y for _, y in every]))
    assert out[0] == pytest.approx(expected, abs=1e-6) and out[1] == out[0]
