"""Every solver learns a tiny regression, LARS and LAMB steps match the papers'
formulas computed by hand, and optimizer state survives a save and load."""

from __future__ import annotations

import copy
import io
import math

import pytest
import torch

from trainer.lr_policy import lr_at
from trainer.solvers import LAMB, LARS, SOLVERS, fusable, make_optimizer, parameter_groups, set_lr, uses_momentum

NAMES = [name for name, _label in SOLVERS]
LEARNING_RATES = {
    "sgd": 0.1,
    "momentum": 0.05,
    "nesterov": 0.05,
    "adam": 0.05,
    "adamw": 0.05,
    "rmsprop": 0.01,
    "adagrad": 0.3,
    "adadelta": 10.0,
    "lars": 1.0,
    "lamb": 0.05,
}


def regression() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=generator)
    return x, x @ torch.tensor([[1.5], [-2.0], [0.5], [1.0]]) + 0.7


def model() -> torch.nn.Module:
    torch.manual_seed(1)
    return torch.nn.Linear(4, 1)


def train(net: torch.nn.Module, optimizer: torch.optim.Optimizer, base_lr: float, steps: int, first: int = 0) -> list[float]:
    """Mini-batch steps with the rate set before each, as the trainer does."""
    x, y = regression()
    losses = []
    for step in range(first, first + steps):
        set_lr(optimizer, lr_at({"name": "cosine"}, base_lr, step, 100))
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x[step % 4 :: 4]), y[step % 4 :: 4])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_solver_lists_agree():
    assert list(LEARNING_RATES) == NAMES
    assert all(label for _name, label in SOLVERS)
    assert [name for name in NAMES if uses_momentum(name)] == ["momentum", "nesterov", "rmsprop", "lars"]


@pytest.mark.parametrize("name", NAMES)
def test_every_solver_reduces_the_loss(name):
    net = model()
    optimizer = make_optimizer(name, net.parameters(), LEARNING_RATES[name], 0.9, 1e-4)
    x, y = regression()
    losses = []
    for _ in range(50):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(math.isfinite(loss) for loss in losses)
    assert losses[-1] < 0.75 * losses[0]


def test_make_optimizer_builds_what_each_name_says():
    params = list(model().parameters())
    plain = make_optimizer("sgd", params, 0.1, 0.9, 0.01)
    assert plain.defaults["momentum"] == 0 and plain.defaults["weight_decay"] == 0.01
    assert make_optimizer("momentum", params, 0.1, 0.9, 0).defaults["momentum"] == 0.9
    nesterov = make_optimizer("nesterov", params, 0.1, 0.8, 0)
    assert nesterov.defaults["nesterov"] and nesterov.defaults["momentum"] == 0.8
    assert isinstance(make_optimizer("adamw", params, 0.1, 0.9, 0), torch.optim.AdamW)
    assert make_optimizer("rmsprop", params, 0.1, 0.7, 0).defaults["momentum"] == 0.7
    assert make_optimizer("adadelta", params, 0.3, 0.9, 0).defaults["lr"] == 0.3
    assert isinstance(make_optimizer("lars", params, 0.1, 0.9, 0), LARS)
    assert isinstance(make_optimizer("lamb", params, 0.1, 0.9, 0), LAMB)
    with pytest.raises(ValueError, match="unknown solver 'bogus'"):
        make_optimizer("bogus", params, 0.1, 0.9, 0)
    with pytest.raises(ValueError, match="Nesterov momentum needs a momentum above 0"):
        make_optimizer("nesterov", params, 0.1, 0.0, 0)


def test_set_lr_sets_every_group():
    first, second = model(), model()
    groups = [{"params": first.parameters()}, {"params": second.parameters(), "lr": 1.0}]
    optimizer = make_optimizer("momentum", groups, 0.1, 0.9, 0)
    set_lr(optimizer, 0.025)
    assert [group["lr"] for group in optimizer.param_groups] == [0.025, 0.025]


def with_batchnorm() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Conv2d(4, 3, 1))


def test_batchnorm_biases_carry_their_own_rate_and_weight_decay_into_the_optimiser():
    net = with_batchnorm()
    optimizer = make_optimizer("nesterov", parameter_groups(net, 5e-4, 64.0, 1e-5), 0.1, 0.85, 5e-4)
    set_lr(optimizer, 0.2)
    by_param = {id(p): group for group in optimizer.param_groups for p in group["params"]}
    bias = by_param[id(net[1].bias)]
    assert (bias["lr"], bias["weight_decay"], bias["params"]) == (pytest.approx(0.2 * 64), 1e-5, [net[1].bias])
    for param in (net[0].weight, net[0].bias, net[1].weight, net[2].weight):
        assert (by_param[id(param)]["lr"], by_param[id(param)]["weight_decay"]) == (pytest.approx(0.2), 5e-4)
    assert sum(len(group["params"]) for group in optimizer.param_groups) == len(list(net.parameters()))


def test_without_batchnorm_settings_every_parameter_takes_the_base_rate_and_decay():
    groups = parameter_groups(with_batchnorm(), 5e-4)
    assert {(group["lr_scale"], group["weight_decay"]) for group in groups} == {(1.0, 5e-4)}


def test_a_parameter_past_its_last_epoch_stops_changing_and_the_rest_train_on():
    net = with_batchnorm()
    limited = net[0].bias
    optimizer = make_optimizer("nesterov", parameter_groups(net, 5e-4, limited={id(limited): 1}), 0.1, 0.9, 5e-4)
    x = torch.randn(8, 2, 5, 5, generator=torch.Generator().manual_seed(0))
    seen = []
    for epoch in range(4):
        set_lr(optimizer, 0.1, epoch)
        net(x).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        seen.append((limited.detach().clone(), net[2].weight.detach().clone()))
    assert not torch.equal(seen[0][0], seen[1][0]), "it trains in epochs 0 and 1"
    assert torch.equal(seen[1][0], seen[2][0]) and torch.equal(seen[2][0], seen[3][0]), "then it stops, momentum and all"
    assert not torch.equal(seen[2][1], seen[3][1]), "the others go on"


def test_lars_steps_match_the_paper_by_hand():
    lr, momentum, decay, trust = 0.5, 0.9, 0.01, 0.001
    weight = torch.tensor([[0.3, -0.4], [1.2, 0.0]], dtype=torch.float64)
    bias = torch.tensor([0.2, -0.1], dtype=torch.float64)
    still = torch.tensor([0.7, 0.8], dtype=torch.float64)
    params = [p.clone().requires_grad_() for p in (weight, bias, still)]
    optimizer = LARS(params, lr=lr, momentum=momentum, weight_decay=decay)
    grads = [
        ([[0.5, 0.1], [-0.2, 0.3]], [1.0, -2.0]),
        ([[-0.1, 0.4], [0.6, 0.2]], [0.5, 0.5]),
    ]
    w, b = weight.tolist(), bias.tolist()
    v_w, v_b = [[0.0, 0.0], [0.0, 0.0]], [0.0, 0.0]
    for step, (g_w, g_b) in enumerate(grads):
        params[0].grad = torch.tensor(g_w, dtype=torch.float64)
        params[1].grad = torch.tensor(g_b, dtype=torch.float64)
        params[2].grad = torch.zeros(2, dtype=torch.float64)
        optimizer.step()
        w_norm = math.sqrt(sum(value**2 for row in w for value in row))
        g_norm = math.sqrt(sum(value**2 for row in g_w for value in row))
        local = trust * w_norm / (g_norm + decay * w_norm)
        v_w = [[momentum * v_w[i][j] + lr * local * (g_w[i][j] + decay * w[i][j]) for j in range(2)] for i in range(2)]
        w = [[w[i][j] - v_w[i][j] for j in range(2)] for i in range(2)]
        v_b = [momentum * v_b[i] + lr * g_b[i] for i in range(2)]
        b = [b[i] - v_b[i] for i in range(2)]
        if step == 0:
            assert local == pytest.approx(0.001 * 1.3 / (math.sqrt(0.39) + 0.013))
        assert params[0].flatten().tolist() == pytest.approx(w[0] + w[1], rel=1e-12)
        assert params[1].tolist() == pytest.approx(b, rel=1e-12)
    assert torch.equal(params[2].detach(), still)


def test_lars_trust_ratio_is_one_for_a_zero_weight():
    weight = torch.zeros(2, 3, requires_grad=True)
    weight.grad = torch.ones(2, 3)
    LARS([weight], lr=0.1, momentum=0.9, weight_decay=0.5).step()
    assert torch.allclose(weight.detach(), torch.full((2, 3), -0.1))


def test_lamb_steps_match_the_paper_by_hand():
    lr, beta1, beta2, eps, decay = 0.01, 0.9, 0.999, 1e-6, 0.1
    weight = torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64)
    bias = torch.tensor([0.25, -0.5], dtype=torch.float64)
    params = [weight.clone().requires_grad_(), bias.clone().requires_grad_()]
    optimizer = LAMB(params, lr=lr, weight_decay=decay)
    grads = [
        ([0.2, -0.1, 0.4, 0.3], [0.1, -0.3]),
        ([-0.5, 0.2, 0.1, 0.6], [0.4, 0.2]),
        ([0.1, 0.1, -0.2, 0.05], [-0.2, 0.1]),
    ]
    w, b = weight.flatten().tolist(), bias.tolist()
    m_w, v_w, m_b, v_b = [0.0] * 4, [0.0] * 4, [0.0] * 2, [0.0] * 2
    for t, (g_w, g_b) in enumerate(grads, start=1):
        params[0].grad = torch.tensor(g_w, dtype=torch.float64).reshape(2, 2)
        params[1].grad = torch.tensor(g_b, dtype=torch.float64)
        optimizer.step()
        m_w = [beta1 * m + (1 - beta1) * g for m, g in zip(m_w, g_w, strict=True)]
        v_w = [beta2 * v + (1 - beta2) * g * g for v, g in zip(v_w, g_w, strict=True)]
        r = [
            (m / (1 - beta1**t)) / (math.sqrt(v / (1 - beta2**t)) + eps) + decay * x
            for m, v, x in zip(m_w, v_w, w, strict=True)
        ]
        ratio = math.sqrt(sum(x * x for x in w)) / math.sqrt(sum(x * x for x in r))
        w = [x - lr * ratio * u for x, u in zip(w, r, strict=True)]
        m_b = [beta1 * m + (1 - beta1) * g for m, g in zip(m_b, g_b, strict=True)]
        v_b = [beta2 * v + (1 - beta2) * g * g for v, g in zip(v_b, g_b, strict=True)]
        b = [
            x - lr * (m / (1 - beta1**t)) / (math.sqrt(v / (1 - beta2**t)) + eps)
            for m, v, x in zip(m_b, v_b, b, strict=True)
        ]
        assert params[0].flatten().tolist() == pytest.approx(w, rel=1e-12)
        assert params[1].tolist() == pytest.approx(b, rel=1e-12)


def test_lamb_trust_ratio_is_one_for_a_zero_weight():
    weight = torch.zeros(2, 2, requires_grad=True)
    weight.grad = torch.tensor([[1.0, -1.0], [2.0, -2.0]])
    LAMB([weight], lr=0.1, weight_decay=0.5).step()
    assert torch.allclose(weight.detach(), torch.tensor([[-0.1, 0.1], [-0.1, 0.1]]), atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_saved_state_continues_identically(name):
    first = model()
    optimizer = make_optimizer(name, first.parameters(), LEARNING_RATES[name], 0.9, 1e-3)
    train(first, optimizer, LEARNING_RATES[name], 5)
    saved = io.BytesIO()
    torch.save({"model": first.state_dict(), "optimizer": optimizer.state_dict()}, saved)
    saved.seek(0)
    checkpoint = torch.load(saved, weights_only=True)
    second = model()
    second.load_state_dict(checkpoint["model"])
    resumed = make_optimizer(name, second.parameters(), LEARNING_RATES[name], 0.9, 1e-3)
    resumed.load_state_dict(checkpoint["optimizer"])
    original = copy.deepcopy(first)
    lr = LEARNING_RATES[name]
    assert train(first, optimizer, lr, 10, first=5) == train(second, resumed, lr, 10, first=5)
    for kept, reloaded, before in zip(first.parameters(), second.parameters(), original.parameters(), strict=True):
        assert torch.equal(kept, reloaded)
        assert not torch.equal(kept, before)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("solver", [LARS, LAMB])
def test_steps_never_wait_for_the_device(solver):
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2)).cuda()
    optimizer = solver(net.parameters(), lr=0.1, weight_decay=0.01)
    net(torch.randn(16, 8, device="cuda")).square().mean().backward()
    optimizer.step()
    torch.cuda.set_sync_debug_mode("error")
    try:
        optimizer.step()
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_the_solvers_torch_fuses_run_fused_on_the_cpu_and_the_others_as_they_are():
    params = [torch.nn.Parameter(torch.randn(3, 2)), torch.nn.Parameter(torch.randn(2))]
    for name in ("sgd", "momentum", "nesterov", "adam", "adamw", "adagrad"):
        assert make_optimizer(name, params, 0.1, 0.9, 0.01).defaults["fused"] is True, name
    for name in ("rmsprop", "adadelta", "lars", "lamb"):
        assert not make_optimizer(name, params, 0.1, 0.9, 0.01).defaults.get("fused"), name
    assert not fusable([torch.nn.Parameter(torch.randn(2, dtype=torch.float64)).to("meta")])
    assert not fusable([])
    grouped = make_optimizer("adamw", [{"params": params[:1]}, {"params": params[1:], "weight_decay": 0}], 0.1, 0.9, 0.01)
    assert grouped.defaults["fused"] is True


def test_a_fused_step_moves_the_parameters_as_the_loop_does():
    torch.manual_seed(0)
    for name, kind in (("momentum", torch.optim.SGD), ("adamw", torch.optim.AdamW)):
        fused_params = [torch.nn.Parameter(torch.randn(5, 4)), torch.nn.Parameter(torch.randn(4))]
        loop_params = [torch.nn.Parameter(p.detach().clone()) for p in fused_params]
        fused = make_optimizer(name, fused_params, 0.05, 0.9, 0.01)
        loop = kind(loop_params, lr=0.05, weight_decay=0.01, **({"momentum": 0.9} if name == "momentum" else {}),
                    foreach=False)
        for _ in range(5):
            grads = [torch.randn_like(p) for p in fused_params]
            for p, q, g in zip(fused_params, loop_params, grads, strict=True):
                p.grad, q.grad = g.clone(), g.clone()
            fused.step()
            loop.step()
        for p, q in zip(fused_params, loop_params, strict=True):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
