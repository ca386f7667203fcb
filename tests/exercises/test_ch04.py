"""Chapter 04's answer suite: correct answers in the styles a learner plausibly writes pass the
visible check and the hidden seeds; each common mistake fails with the message that names it;
autograd, torch's clipping and the course's own functions are refused however they are reached."""

import functools
import math
from collections import deque

import pytest
import torch
from exercise_helpers import (
    fails_on_seeds,
    fails_when_unfinished,
    fails_with,
    notebook_hidden_seeds,
    passes_on_seeds,
    styles_per_check,
)
from torch.nn.utils import clip_grad_norm_ as bound_clip_grad_norm_

import attncourse.chapters.ch04_gradient_paths as chapter
import attncourse.metrics
from attncourse.chapters.ch04_gradient_paths import clip_gradients, shortest_path_lengths
from attncourse.exercises import ch04 as exercises_ch04
from attncourse.exercises.ch04 import (
    check_clip_gradients,
    check_effective_span,
    check_path_lengths,
    check_rnn_jacobian,
)

CHECKS = {  # the number of cases each check runs, and the notebook's hidden seed
    check_rnn_jacobian: (6, 21),
    check_effective_span: (7, 22),
    check_path_lengths: (7, 23),
    check_clip_gradients: (7, 24),
}
MORE_SEEDS = (1, 7, 2024)


def seeds(check, more=MORE_SEEDS):
    """The visible seed 0, the seed of the notebook's hidden test, and ``more``."""
    return (0, CHECKS[check][1], *more)


# ------------------------------------------------------------------------- 1: RNN Jacobian


def jacobian(W, h, t):  # newest factor first, diag(1 - h_s²) as a matrix
    J = torch.eye(h.shape[1], dtype=h.dtype)
    for s in range(h.shape[0] - 1, t, -1):
        J = J @ torch.diag(1 - h[s] ** 2) @ W
    return J


def jacobian_broadcast(W, h, t):  # the notebook's: scale the rows of W_hh by broadcasting
    J = torch.eye(h.shape[1], dtype=h.dtype)
    for s in range(h.shape[0] - 1, t, -1):
        J = J @ ((1 - h[s] ** 2)[:, None] * W)
    return J


def jacobian_oldest_first(W, h, t):  # forward in time: J <- D_s W J, from h_t to h_T
    J = torch.eye(h.shape[1], dtype=h.dtype)
    for s in range(t + 1, h.shape[0]):
        J = (1 - h[s] ** 2)[:, None] * (W @ J)
    return J


def jacobian_multi_dot(W, h, t):
    factors = [torch.diag(1 - h[s] ** 2) @ W for s in range(h.shape[0] - 1, t, -1)]
    eye = torch.eye(h.shape[1], dtype=h.dtype)
    return torch.linalg.multi_dot([eye, eye, *factors])  # multi_dot needs two matrices


def jacobian_batched(W, h, t):  # every factor at once (T - t - 1, d, d), then a reduce
    factors = (1 - h[t + 1 :] ** 2)[:, :, None] * W
    return functools.reduce(lambda J, F: F @ J, factors, torch.eye(h.shape[1], dtype=h.dtype))


def jacobian_einsum(W, h, t):
    J = torch.eye(h.shape[1], dtype=h.dtype)
    for s in range(h.shape[0] - 1, t, -1):
        J = torch.einsum("ab,b,bc->ac", J, 1 - h[s] ** 2, W)
    return J


def jacobian_float64(W, h, t):
    return jacobian(W.double(), h.double(), t).to(h.dtype)


# ------------------------------------------------------------------------- 2: effective span


def distances(w):
    T, S = w.shape[-2], w.shape[-1]
    return (torch.arange(T)[:, None] - torch.arange(S)[None, :]).abs()  # (T, S)


def span(w, eps):  # the notebook's
    d = distances(w)
    return torch.where(w > eps, d, torch.zeros_like(d)).amax(dim=-1)


def span_multiply(w, eps):  # a bool mask times the distances, .max().values
    return (distances(w) * (w > eps)).max(dim=-1).values


def span_masked_fill(w, eps):
    return distances(w).expand(w.shape).masked_fill(w <= eps, 0).amax(dim=-1)


def span_loops(w, eps):
    T, S = w.shape[-2], w.shape[-1]
    rows = w.reshape(-1, T, S)
    out = torch.zeros(rows.shape[:2], dtype=torch.long)
    for b in range(rows.shape[0]):
        for i in range(T):
            for j in range(S):
                if rows[b, i, j] > eps:
                    out[b, i] = max(int(out[b, i]), abs(i - j))
    return out.reshape(w.shape[:-1])


def span_cdist(w, eps):  # float distances, rounded back to integers
    T, S = w.shape[-2], w.shape[-1]
    i = torch.arange(T, dtype=torch.float64)[:, None]
    j = torch.arange(S, dtype=torch.float64)[:, None]
    return (torch.cdist(i, j, p=1) * (w > eps)).amax(dim=-1).round().long()


# ------------------------------------------------------------------------- 3: path lengths


def bfs_lists(w, eps):
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


def bfs_frontier(w, eps):  # the notebook's: a boolean frontier per step
    n = w.shape[0]
    edges = w > eps
    dist = torch.full((n, n), float("inf"), dtype=torch.float64)
    for start in range(n):
        dist[start, start] = 0.0
        frontier = torch.zeros(n, dtype=torch.bool)
        frontier[start] = True
        step = 0
        while frontier.any():
            step += 1
            reached = edges[frontier].any(dim=0) & torch.isinf(dist[start])
            dist[start, reached] = float(step)
            frontier = reached
    return dist


def bfs_queue(w, eps):  # a textbook BFS on Python lists
    n = w.shape[0]
    adjacent = (w > eps).tolist()
    rows = []
    for s in range(n):
        dist = [math.inf] * n
        dist[s] = 0
        queue = deque([s])
        while queue:
            u = queue.popleft()
            for v in range(n):
                if adjacent[u][v] and dist[v] == math.inf:
                    dist[v] = dist[u] + 1
                    queue.append(v)
        rows.append(dist)
    return torch.tensor(rows, dtype=torch.float64)


def floyd_warshall(w, eps):  # the matrix form: min-plus relaxation through every k
    n = w.shape[0]
    dist = torch.where(w > eps, 1.0, math.inf).double()
    dist.fill_diagonal_(0.0)
    for k in range(n):
        dist = torch.minimum(dist, dist[:, k : k + 1] + dist[k : k + 1, :])
    return dist


def reachability_powers(w, eps):  # reachable within k steps: boolean matrix products
    n = w.shape[0]
    A = (w > eps).double()
    reach = torch.eye(n, dtype=torch.float64)
    dist = torch.where(reach > 0, 0.0, math.inf).double()
    for k in range(1, n):
        reach = ((reach @ A + reach) > 0).double()
        dist = torch.where((reach > 0) & torch.isinf(dist), float(k), dist)
    return dist


# ------------------------------------------------------------------------- 4: clipping


def global_norm(grads):
    return math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads))


def clip(grads, max_norm):  # the notebook's: torch's convention max_norm / (||g|| + 1e-6)
    scale = min(1.0, max_norm / (global_norm(grads) + 1e-6))
    return tuple(g * scale for g in grads)


def clip_as_written(grads, max_norm):  # the exercise text: no ε, rescale only above max_norm
    total = global_norm(grads)
    return tuple(g * (max_norm / total) for g in grads) if total > max_norm else tuple(grads)


def clip_vector_norm(grads, max_norm):  # one flat vector, a tensor scale
    total = torch.linalg.vector_norm(torch.cat([g.reshape(-1).double() for g in grads]))
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return tuple(g * scale.to(g.dtype) for g in grads)


def clip_where(grads, max_norm):  # the norm of the per-tensor norms; torch.where, no ε
    total = torch.stack([g.double().norm() for g in grads]).norm()
    scale = torch.where(total > max_norm, max_norm / total, torch.ones_like(total))
    return tuple(g * scale.to(g.dtype) for g in grads)


def clip_epsilon_inside(grads, max_norm):  # ε inside the square root; a list back
    total = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads) + 1e-6)
    return [g * min(1.0, max_norm / total) for g in grads]


def clip_own_dtype(grads, max_norm):  # the norm in the gradients' own dtype
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    return tuple(g * min(1.0, max_norm / (float(total) + 1e-6)) for g in grads)


# ------------------------------------------------------------------- every style, every seed

STYLES = [
    (check_rnn_jacobian, jacobian),
    (check_rnn_jacobian, jacobian_broadcast),
    (check_rnn_jacobian, jacobian_oldest_first),
    (check_rnn_jacobian, jacobian_multi_dot),
    (check_rnn_jacobian, jacobian_batched),
    (check_rnn_jacobian, jacobian_einsum),
    (check_rnn_jacobian, jacobian_float64),
    (check_effective_span, span),
    (check_effective_span, span_multiply),
    (check_effective_span, span_masked_fill),
    (check_effective_span, span_loops),
    (check_effective_span, span_cdist),
    (check_path_lengths, bfs_lists),
    (check_path_lengths, bfs_frontier),
    (check_path_lengths, bfs_queue),
    (check_path_lengths, floyd_warshall),
    (check_path_lengths, reachability_powers),
    (check_clip_gradients, clip),
    (check_clip_gradients, clip_as_written),
    (check_clip_gradients, clip_vector_norm),
    (check_clip_gradients, clip_where),
    (check_clip_gradients, clip_epsilon_inside),
    (check_clip_gradients, clip_own_dtype),
]


@pytest.mark.parametrize("check, answer", STYLES, ids=[a.__name__ for _, a in STYLES])
def test_every_correct_style_passes_the_visible_check_and_the_hidden_seeds(check, answer, capsys):
    passes_on_seeds(check, answer, seeds(check), capsys, cases=CHECKS[check][0])


def test_the_hidden_seeds_are_the_notebook_s():
    assert notebook_hidden_seeds("04_gradient_paths", exercises_ch04) == {
        check: seed for check, (_, seed) in CHECKS.items()
    }


def test_each_exercise_has_at_least_three_correct_styles():
    counts = styles_per_check(STYLES, CHECKS)
    assert min(counts.values()) >= 3, counts


@pytest.mark.parametrize("check", list(CHECKS), ids=lambda c: c.reference.__name__)
def test_an_unfinished_or_returnless_answer_says_so(check):
    fails_when_unfinished(check)


def test_the_epsilon_conventions_differ_by_more_than_float64_precision_and_all_pass(capsys):
    # why the clipping check compares at 1e-6 relative: max_norm / ||g|| and torch's
    # max_norm / (||g|| + 1e-6) differ by ~1e-6 / ||g||, far above float64's round-off
    grads = (torch.randn(3, 4, dtype=torch.float64) * 10,)
    a, b = clip_as_written(grads, 1.0)[0], clip(grads, 1.0)[0]
    assert 1e-12 < float(((a - b) / a).abs().max()) < 1e-6
    for answer in (clip, clip_as_written, clip_epsilon_inside):
        check_clip_gradients(answer)
    assert capsys.readouterr().out.count("all 7 checks passed") == 3


# --------------------------------------------------------------------------- common mistakes


def product(W, h, t, factor, steps=None, oldest_left=False):
    """Π factor(s) over ``steps`` (rows T-1 .. t+1 unless given), newest on the left."""
    rows = range(h.shape[0] - 1, t, -1) if steps is None else steps
    mats = [factor(s) for s in rows]
    J = torch.eye(h.shape[1], dtype=h.dtype)
    for m in mats[::-1] if oldest_left else mats:
        J = J @ m
    return J


def jacobian_float32_eye(W, h, t):  # torch.eye(d) is float32
    J = torch.eye(h.shape[1])
    for s in range(h.shape[0] - 1, t, -1):
        J = J @ torch.diag(1 - h[s] ** 2) @ W
    return J


def path_lengths_no_diagonal(w, eps):  # BFS that never sets dist[s, s] = 0
    n = w.shape[0]
    edges = w > eps
    dist = torch.full((n, n), math.inf, dtype=torch.float64)
    for s in range(n):
        frontier, seen, step = torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool), 0
        frontier[s] = True
        while frontier.any():
            step += 1
            reached = edges[frontier].any(0) & ~seen
            seen |= reached
            dist[s, reached] = float(step)
            frontier = reached
    return dist


def path_lengths_one_hop(w, eps):
    d = torch.where(w > eps, 1.0, math.inf).double()
    d.fill_diagonal_(0)
    return d


def path_lengths_too_few_rounds(w, eps):  # Floyd-Warshall through k < n - 3 only
    n = w.shape[0]
    dist = torch.where(w > eps, 1.0, math.inf).double()
    dist.fill_diagonal_(0.0)
    for k in range(n - 3):
        dist = torch.minimum(dist, dist[:, k : k + 1] + dist[k : k + 1, :])
    return dist


def clip_per_tensor(grads, m):
    return tuple(clip((g,), m)[0] for g in grads)


def clip_always(grads, m):
    total = global_norm(grads)
    return tuple(g * (m / total) if total > 0 else g for g in grads)


def clip_in_place(grads, m):
    for g, scaled in zip(grads, clip(grads, m)):
        g.copy_(scaled)
    return grads


def clip_norm_scaled(grads, m, norm):
    return tuple(g * min(1.0, m / (norm + 1e-6)) for g in grads)


def clip_zero_division(grads, m):  # Python floats: max_norm / 0.0 raises
    total = global_norm(grads)
    return tuple(g * min(1.0, m / total) for g in grads)


MISTAKES = [
    # 1: RNN Jacobian
    (
        check_rnn_jacobian,
        lambda W, h, t: product(W, h, t, lambda s: W),
        "missing the tanh derivative",
    ),
    (
        check_rnn_jacobian,
        lambda W, h, t: product(W, h, t, lambda s: torch.diag(1 - h[s] ** 2) @ W, oldest_left=True),
        "multiplied in the wrong order",
    ),
    (
        check_rnn_jacobian,
        lambda W, h, t: product(W, h, t, lambda s: W @ torch.diag(1 - h[s] ** 2)),
        "on the wrong side",
    ),
    (
        check_rnn_jacobian,
        lambda W, h, t: product(W, h, t, lambda s: torch.diag(1 - h[s - 1] ** 2) @ W),
        "off by one",
    ),
    (  # W instead of Wᵀ the other way round: W_hhᵀ where W_hh belongs
        check_rnn_jacobian,
        lambda W, h, t: product(W, h, t, lambda s: torch.diag(1 - h[s] ** 2) @ W.T),
        "W_hh is transposed",
    ),
    (check_rnn_jacobian, lambda W, h, t: jacobian(W, h, t).T, "the result is transposed"),
    (
        check_rnn_jacobian,
        lambda W, h, t: jacobian(W, h, t) @ torch.diag(1 - h[t] ** 2) @ W,
        "one step too many",
    ),
    (
        check_rnn_jacobian,
        lambda W, h, t: product(
            W, h, t, lambda s: torch.diag(1 - h[s] ** 2) @ W, steps=range(h.shape[0] - 2, t, -1)
        ),
        "one step too few",
    ),
    (check_rnn_jacobian, lambda W, h, t: jacobian(W, torch.tanh(h), t), "do not apply tanh again"),
    (check_rnn_jacobian, jacobian_float32_eye, "same dtype"),
    (  # the exercise text: float32 states give a float32 answer
        check_rnn_jacobian,
        lambda W, h, t: jacobian(W.double(), h.double(), t),
        "returned dtype torch.float64, expected torch.float32",
    ),
    # 2: effective span
    (check_effective_span, lambda w, e: span(w, e - 1e-12), "A_ij > eps (strictly)"),
    (check_effective_span, lambda w, e: (w > e).sum(-1), "that is the coverage"),
    (check_effective_span, lambda w, e: span(w, e).float(), "integer distances"),
    (check_effective_span, lambda w, e: span(w, e).int(), "integer distances"),
    (
        check_effective_span,
        lambda w, e: torch.where(w > e, torch.arange(w.shape[-1]).expand(w.shape), 0).amax(-1),
        "returned the key index j",
    ),
    (
        check_effective_span,
        lambda w, e: distances(w).expand(w.shape).gather(-1, w.argmax(-1, keepdim=True))[..., 0],
        "the distance of the largest weight",
    ),
    (  # i - j without the absolute value: keys after the query never count
        check_effective_span,
        lambda w, e: (
            torch.where(w > e, torch.arange(w.shape[-2])[:, None] - torch.arange(w.shape[-1]), 0)
            .amax(-1)
            .clamp(min=0)
        ),
        "use the absolute distance |i − j|",
    ),
    (
        check_effective_span,
        lambda w, e: torch.where(w > e, distances(w), 0).amax(dim=-2),
        "the maximum was taken over the queries",
    ),
    (check_effective_span, lambda w, e: span(w, e) + 1, "off by one"),
    (
        check_effective_span,
        lambda w, e: torch.where(w > e, distances(w) + 1, 0).amax(-1),
        "off by one",
    ),
    (  # the |i - j| table built (S, T): an error once T != S
        check_effective_span,
        lambda w, e: torch.where(w > e, distances(w.transpose(-1, -2)), 0).amax(-1),
        "here T ≠ S: the |i − j| table is (T, S)",
    ),
    # 3: path lengths
    (check_path_lengths, lambda w, e: floyd_warshall(w, e).T, "the result is transposed"),
    (check_path_lengths, path_lengths_one_hop, "only one step was taken"),
    (
        check_path_lengths,
        lambda w, e: torch.where(torch.isinf(bfs_lists(w, e)), -1.0, bfs_lists(w, e)),
        "must be float('inf') (not -1, 0 or n)",
    ),
    (
        check_path_lengths,
        lambda w, e: torch.nan_to_num(floyd_warshall(w, e), posinf=float(w.shape[0])),
        "must be float('inf') (not -1, 0 or n)",
    ),
    (check_path_lengths, lambda w, e: floyd_warshall(w, e).float(), "return a float64 tensor"),
    (check_path_lengths, lambda w, e: floyd_warshall(w, e).long(), "return a float64 tensor"),
    (
        check_path_lengths,
        lambda w, e: floyd_warshall(w, e) + 1 - torch.eye(w.shape[0], dtype=torch.float64),
        "counted positions on the path instead of steps",
    ),
    (check_path_lengths, path_lengths_no_diagonal, "the diagonal must be 0"),
    (
        check_path_lengths,
        lambda w, e: floyd_warshall(w + (w == e) * 1e-9, e),
        "weights equal to eps were counted as edges",
    ),
    (
        check_path_lengths,
        lambda w, e: floyd_warshall(torch.maximum(w, w.T), e),  # i reads j, so j reads i
        "the edges were taken both ways",
    ),
    (
        check_path_lengths,
        path_lengths_too_few_rounds,
        "some pairs marked unreachable (inf) are connected by a path",
    ),
    # 4: clipping
    (check_clip_gradients, clip_per_tensor, "clipped each tensor by its own norm"),
    (
        check_clip_gradients,
        lambda grads, m: tuple(g.clamp(-m, m) for g in grads),
        "that is clipping by value",
    ),
    (check_clip_gradients, clip_always, "multiply only when ||g|| > max_norm"),
    (check_clip_gradients, clip_in_place, "changed its input in place"),
    (
        check_clip_gradients,
        lambda grads, m: clip_norm_scaled(grads, m, sum(float(g.double().norm()) for g in grads)),
        "summed the tensors' norms",
    ),
    (
        check_clip_gradients,
        lambda grads, m: clip_norm_scaled(grads, m, global_norm(grads) ** 2),
        "used the squared norm",
    ),
    (
        check_clip_gradients,
        lambda grads, m: (
            tuple(g * (m / global_norm(grads)) for g in grads)
            if global_norm(grads) ** 2 > m
            else tuple(grads)
        ),
        "compared the squared norm with max_norm",
    ),
    (
        check_clip_gradients,
        lambda grads, m: tuple(g * max(1.0, m / (global_norm(grads) + 1e-6)) for g in grads),
        "returned the gradients unchanged although ||g|| > max_norm",
    ),
    (
        check_clip_gradients,
        lambda grads, m: tuple(
            g * (global_norm(grads) / m) if global_norm(grads) > m else g for g in grads
        ),
        "the ratio is upside down",
    ),
    (
        check_clip_gradients,
        lambda grads, m: clip_norm_scaled(
            grads, m, global_norm(grads) / math.sqrt(sum(g.numel() for g in grads))
        ),
        "used the root mean square",
    ),
    (check_clip_gradients, clip_zero_division, "the global norm is 0 here"),
    (
        check_clip_gradients,
        lambda grads, m: tuple(g.double() for g in clip(grads, m)),
        "returned dtype torch.float64, expected torch.float32",
    ),
]


@pytest.mark.parametrize("check, answer, message", MISTAKES)
def test_each_common_mistake_is_named_on_the_visible_and_the_hidden_seed(check, answer, message):
    fails_on_seeds(check, answer, seeds(check, more=(7,)), message)


def test_a_search_without_the_zero_diagonal_is_named_on_every_graph_it_gets_wrong():
    # judged case by case, as the grader does: with and without self-edges A_ii > eps
    named = 0
    for seed in seeds(check_path_lengths):
        for case in check_path_lengths.inputs(seed):
            got = path_lengths_no_diagonal(*case.args)
            if not torch.equal(got, floyd_warshall(*case.args)):
                assert "the diagonal must be 0" in check_path_lengths.judge(case, got), case.label
                named += 1
    assert named >= 5 * len(seeds(check_path_lengths))


# ------------------------------- autograd, torch's clipping and the course's own are refused


def torch_clip(grads, max_norm):
    params = [torch.nn.Parameter(g.clone()) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    bound_clip_grad_norm_(params, max_norm)
    return tuple(p.grad for p in params)


def clip_with_total_norm(grads, max_norm):
    total = float(torch.nn.utils.get_total_norm(list(grads)))
    return tuple(g * min(1.0, max_norm / (total + 1e-6)) for g in grads)


class CallableAnswer:
    """An answer whose source the check cannot read: the refusal at run time still stops it."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        return self.fn(*args)


REFUSED = [
    (
        check_rnn_jacobian,
        lambda W, h, t: torch.autograd.functional.jacobian(lambda x: x, h[t]),
        ["torch.autograd.functional.jacobian"],
    ),
    (
        check_rnn_jacobian,
        lambda W, h, t: torch.func.jacrev(lambda x: x)(h[t]),
        ["torch.func.jacrev"],
    ),
    (
        check_rnn_jacobian,
        CallableAnswer(lambda W, h, t: torch.autograd.functional.jacobian(lambda x: x, h[t])),
        ["a derivative by automatic differentiation"],
    ),
    (
        check_rnn_jacobian,
        lambda W, h, t: chapter.input_jacobian(lambda x: x, h[t]),
        ["course's own", "input_jacobian"],
    ),
    (
        check_effective_span,
        lambda w, e: attncourse.metrics.effective_span(w, e),
        ["course's own", "effective_span"],
    ),
    (
        check_effective_span,
        CallableAnswer(attncourse.metrics.effective_span),
        ["effective_span was called"],
    ),
    (
        check_path_lengths,
        lambda w, e: shortest_path_lengths(w > e),
        ["course's own", "shortest_path_lengths"],
    ),
    (
        check_path_lengths,
        lambda w, e: torch.stack([chapter.path_lengths_from(w > e, i) for i in range(len(w))]),
        ["course's own", "path_lengths_from"],
    ),
    (
        check_path_lengths,
        CallableAnswer(lambda w, e: shortest_path_lengths(w > e)),
        ["shortest_path_lengths was called"],
    ),
    (check_clip_gradients, torch_clip, ["torch.nn.utils.clip_grad_norm_"]),
    (check_clip_gradients, CallableAnswer(torch_clip), ["clip_grad_norm_"]),
    (check_clip_gradients, clip_with_total_norm, ["torch.nn.utils.get_total_norm"]),
    (
        check_clip_gradients,
        lambda g, m: clip_gradients(g, m)[0],
        ["course's own", "clip_gradients"],
    ),
    (
        check_clip_gradients,
        CallableAnswer(lambda g, m: clip_gradients(g, m)[0]),
        ["clip_gradients was called"],
    ),
]


@pytest.mark.parametrize("check, answer, fragments", REFUSED)
def test_autograd_torch_s_clipping_and_the_course_s_functions_are_refused(check, answer, fragments):
    fails_with(check, answer, "must be written from scratch", *fragments)


def test_what_a_refused_answer_called_works_again_afterwards():
    for check, answer, _ in REFUSED:
        with pytest.raises(AssertionError):
            check(answer)
    p = torch.nn.Parameter(torch.ones(4))
    p.grad = torch.full((4,), 3.0)  # norm 6
    assert float(torch.nn.utils.clip_grad_norm_([p], 1.0)) == pytest.approx(6.0)
    assert torch.allclose(p.grad.norm(), torch.tensor(1.0), atol=1e-5)
    assert attncourse.metrics.effective_span(torch.eye(3), 0.5).tolist() == [0, 0, 0]
    assert shortest_path_lengths(torch.eye(2, dtype=torch.bool))[0, 1] == math.inf
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x**2).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_every_check_is_exported():
    assert sorted(exercises_ch04.__all__) == sorted(
        ["check_clip_gradients", "check_effective_span", "check_path_lengths", "check_rnn_jacobian"]
    )


def test_a_dtype_the_exercise_sets_is_not_called_the_input_s():
    """Exercise 2 returns int64 distances and exercise 3 float64, whatever the input's dtype: the
    dtype message then names the expected dtype and does not say "keep the input's dtype"."""
    for check, answer in (
        (check_effective_span, lambda w, e: span(w, e).to(w.dtype)),
        (check_path_lengths, lambda w, e: bfs_frontier(w, e).to(w.dtype)),  # float32 weights
    ):
        with pytest.raises(AssertionError) as info:
            check(answer)
        assert "returned dtype torch.float" in str(info.value), str(info.value)
        assert "keep the input's dtype" not in str(info.value), str(info.value)
