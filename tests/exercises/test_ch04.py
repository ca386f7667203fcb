"""Chapter 04's exercise checks pass correct solutions and name each common mistake specifically."""

import math

import pytest
import torch
from exercise_helpers import fails_with
from torch.nn.utils import clip_grad_norm_ as bound_clip_grad_norm_

import attncourse.metrics
from attncourse.exercises import ch04 as exercises_ch04
from attncourse.exercises.ch04 import (
    check_clip_gradients,
    check_effective_span,
    check_path_lengths,
    check_rnn_jacobian,
)

# ------------------------------------------------------------------------- 1: RNN Jacobian


def rnn_jacobian(
    W, states, t, order="newest_left", derivative=True, side="left", shift=0, transpose_w=False
):
    T, d = states.shape
    mats = []
    for s in range(T - 1, t, -1):
        D = (1 - states[s - shift] ** 2) if derivative else torch.ones(d, dtype=states.dtype)
        Wm = W.T if transpose_w else W
        mats.append(torch.diag(D) @ Wm if side == "left" else Wm @ torch.diag(D))
    if order == "oldest_left":
        mats = mats[::-1]
    J = torch.eye(d, dtype=states.dtype)
    for m in mats:
        J = J @ m
    return J


def test_rnn_jacobian_check_passes_a_correct_solution(capsys):
    check_rnn_jacobian(rnn_jacobian)
    check_rnn_jacobian(rnn_jacobian, seed=5)
    assert "all 6 checks passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda W, h, t: rnn_jacobian(W, h, t, derivative=False), "missing the tanh derivative"),
        (lambda W, h, t: rnn_jacobian(W, h, t, order="oldest_left"), "wrong order"),
        (lambda W, h, t: rnn_jacobian(W, h, t, side="right"), "on the wrong side"),
        (lambda W, h, t: rnn_jacobian(W, h, t, shift=1), "off by one"),
        (lambda W, h, t: rnn_jacobian(W, h, t, transpose_w=True), "W_hh is transposed"),
        (lambda W, h, t: rnn_jacobian(W, h, t).T, "the result is transposed"),
        (
            lambda W, h, t: rnn_jacobian(W, h, t) @ torch.diag(1 - h[t] ** 2) @ W,
            "one step too many",
        ),
        (lambda W, h, t: rnn_jacobian(W, torch.tanh(h), t), "do not apply tanh again"),
    ],
)
def test_rnn_jacobian_check_names_each_mistake(wrong, fragment):
    fails_with(check_rnn_jacobian, wrong, fragment)


def test_rnn_jacobian_check_reports_a_missing_return_and_an_unfinished_exercise():
    fails_with(check_rnn_jacobian, lambda W, h, t: None, "forget `return`")

    def blank(W, h, t):
        raise NotImplementedError()

    fails_with(check_rnn_jacobian, blank, "not implemented yet")


# ------------------------------------------------------------------------- 2: effective span


def span(w, eps):
    T, S = w.shape[-2], w.shape[-1]
    d = (torch.arange(T)[:, None] - torch.arange(S)[None, :]).abs()
    return torch.where(w > eps, d, torch.zeros_like(d)).amax(dim=-1)


def test_effective_span_check_passes_a_correct_solution(capsys):
    check_effective_span(span)
    check_effective_span(span, seed=9)
    assert "all 7 checks passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda w, e: span(w, e - 1e-12), "strictly"),
        (lambda w, e: (w > e).sum(-1), "coverage"),
        (lambda w, e: span(w, e).float(), "integer distances"),
        (
            lambda w, e: torch.where(w > e, torch.arange(w.shape[-1]).expand(w.shape), 0).amax(-1),
            "key index",
        ),
    ],
)
def test_effective_span_check_names_each_mistake(wrong, fragment):
    fails_with(check_effective_span, wrong, fragment)


def test_effective_span_check_refuses_the_package_function():
    fails_with(
        check_effective_span, lambda w, e: attncourse.metrics.effective_span(w, e), "from scratch"
    )
    assert attncourse.metrics.effective_span(torch.eye(3), 0.5).tolist() == [
        0,
        0,
        0,
    ]  # restored afterwards


# ------------------------------------------------------------------------- 3: path lengths


def bfs(w, eps):
    n = w.shape[0]
    edges = w > eps
    dist = torch.full((n, n), math.inf, dtype=torch.float64)
    for s in range(n):
        dist[s, s] = 0
        frontier, step = [s], 0
        while frontier:
            step += 1
            nxt = [v for u in frontier for v in range(n) if edges[u, v] and math.isinf(dist[s, v])]
            for v in nxt:
                dist[s, v] = step
            frontier = list(dict.fromkeys(nxt))
    return dist


def test_path_lengths_check_passes_a_correct_solution(capsys):
    check_path_lengths(bfs)
    check_path_lengths(bfs, seed=3)
    assert "all 7 checks passed" in capsys.readouterr().out


def one_hop(w, eps):
    d = torch.where(w > eps, 1.0, math.inf).double()
    d.fill_diagonal_(0)
    return d


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda w, e: bfs(w, e).T, "transposed"),
        (one_hop, "only one step"),
        (
            lambda w, e: torch.where(torch.isinf(bfs(w, e)), -1.0, bfs(w, e)).double(),
            "must be float('inf')",
        ),
        (lambda w, e: bfs(w, e).float(), "float64"),
        (
            lambda w, e: bfs(w, e) + 1 - torch.eye(w.shape[0], dtype=torch.float64),
            "counted positions",
        ),
    ],
)
def test_path_lengths_check_names_each_mistake(wrong, fragment):
    fails_with(check_path_lengths, wrong, fragment)


def test_path_lengths_check_refuses_the_package_search():
    from attncourse.chapters.ch04_gradient_paths import shortest_path_lengths

    fails_with(check_path_lengths, lambda w, e: shortest_path_lengths(w > e), "from scratch")


# ------------------------------------------------------------------------- 4: clipping


def clip(grads, max_norm):
    total = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads))
    scale = min(1.0, max_norm / (total + 1e-6))
    return tuple(g * scale for g in grads)


def test_clip_check_passes_a_correct_solution(capsys):
    check_clip_gradients(clip)
    check_clip_gradients(lambda g, m: list(clip(g, m)), seed=4)  # a list is fine too
    assert "all 6 checks passed" in capsys.readouterr().out


def per_tensor(grads, m):
    return tuple(clip((g,), m)[0] for g in grads)


def always(grads, m):
    total = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads))
    return tuple(g * (m / total) if total > 0 else g for g in grads)


def in_place(grads, m):
    scaled = clip(grads, m)
    for g, s in zip(grads, scaled):
        g.copy_(s)
    return grads


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (per_tensor, "global norm"),
        (lambda grads, m: tuple(g.clamp(-m, m) for g in grads), "clipping by value"),
        (always, "only when ||g|| > max_norm"),
        (in_place, "in place"),
    ],
)
def test_clip_check_names_each_mistake(wrong, fragment):
    fails_with(check_clip_gradients, wrong, fragment)


def torch_clip(grads, max_norm):
    params = [torch.nn.Parameter(g.clone()) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    bound_clip_grad_norm_(params, max_norm)
    return tuple(p.grad for p in params)


def test_clip_check_refuses_torch_clipping_however_it_is_bound_and_restores_it():
    fails_with(check_clip_gradients, torch_clip, "from scratch", "torch.nn.utils.clip_grad_norm_")
    fails_with(
        check_clip_gradients,
        lambda g, m: torch_clip(g, m) if torch.nn.utils.get_total_norm else None,
        "from scratch",
    )
    from attncourse.chapters.ch04_gradient_paths import clip_gradients

    fails_with(check_clip_gradients, lambda g, m: clip_gradients(g, m)[0], "from scratch")
    p = torch.nn.Parameter(torch.ones(4))
    p.grad = torch.full((4,), 3.0)  # norm 6
    assert float(torch.nn.utils.clip_grad_norm_([p], 1.0)) == pytest.approx(
        6.0
    )  # torch's function works again
    assert torch.allclose(p.grad.norm(), torch.tensor(1.0), atol=1e-5)


def test_every_check_is_exported():
    assert sorted(exercises_ch04.__all__) == sorted(
        ["check_clip_gradients", "check_effective_span", "check_path_lengths", "check_rnn_jacobian"]
    )
