"""Checks for chapter 04's exercises (gradient paths), each an
``attncourse.exercises.engine.Exercise``.

* ``check_rnn_jacobian``   — ∂h_T/∂h_t of a tanh RNN as the product of Eq. (5.4.2), from its states;
* ``check_effective_span`` — span_eff(i) = max{|i − j| : A_ij > ε} (Eq. 5.4.4), from scratch;
* ``check_path_lengths``   — breadth-first search on the graph A_ij > ε (Eq. 5.4.5), from scratch;
* ``check_clip_gradients`` — gradient-norm clipping (Pascanu et al. 2013), without torch's clipping.

Each compares the learner's function with the course's reference on random and edge inputs and
names the mistake when the output equals a known wrong variant. ``seed=`` gives fresh inputs.
"""

from __future__ import annotations

import functools
import math

import torch

from ..chapters.ch04_gradient_paths import (
    clip_grad_norm_ as _clip_grad_norm_package,
)
from ..chapters.ch04_gradient_paths import (
    clip_gradients as _clip_gradients_ref,
)
from ..chapters.ch04_gradient_paths import (
    layers_to_connect as _layers_to_connect,
)
from ..chapters.ch04_gradient_paths import (
    path_lengths_from as _path_lengths_from,
)
from ..chapters.ch04_gradient_paths import (
    scaled_orthogonal as _scaled_orthogonal,
)
from ..chapters.ch04_gradient_paths import (
    shortest_path_lengths as _shortest_path_lengths,
)
from ..i18n import say
from ..metrics import effective_span as _effective_span_ref
from ..metrics import information_coverage as _coverage_ref
from .engine import PRECISION, Case, Exercise, randn

_Tensor = torch.Tensor


randn = functools.partial(randn, dtype=torch.float64)  # this chapter's checks work in float64


RETURN_DTYPE = "return {what} (dtype {dtype}), got {got}"
INTEGER_DISTANCES = "integer distances"


def _dtype_hint(expected_dtype, what):
    def hint(got, expected):
        if isinstance(got, _Tensor) and got.dtype != expected_dtype:
            return say(RETURN_DTYPE, what=say(what), dtype=expected_dtype, got=got.dtype)
        return None

    return hint


# ------------------------------------------------------------------------- 1: RNN Jacobian


def _tanh_states(g, T, d, dtype=torch.float64, input_scale=0.5, rho=1.1):
    """Hidden states h_1..h_T (T, d) of a real tanh RNN, and its W_hh (d, d)."""
    W_hh = _scaled_orthogonal(d, rho, g) + randn(
        g, d, d, scale=0.2 / math.sqrt(d)
    )  # (d, d) not normal
    W_xh = randn(g, d, d, scale=1 / math.sqrt(d))  # (d, d)
    x = randn(g, T, d, scale=input_scale)  # (T, d)
    h = torch.zeros(d, dtype=torch.float64)
    states = []
    for t in range(T):
        h = torch.tanh(W_hh @ h + W_xh @ x[t])  # (d,)
        states.append(h)
    return W_hh.to(dtype), torch.stack(states).to(dtype)


def _rnn_jacobian_ref(W_hh, states, t):
    """dh_T/dh_t = D_T W_hh D_{T-1} W_hh ... D_{t+1} W_hh, D_s = diag(1 - h_s^2)   (Eq. 5.4.2).

    states (T, d): rows h_1..h_T (0-based index s holds h_{s+1}); t: a 0-based row index.
    """
    T, d = states.shape
    J = torch.eye(d, dtype=states.dtype)  # (d, d)
    for s in range(T - 1, t, -1):
        J = J @ ((1 - states[s] ** 2)[:, None] * W_hh)  # (d, d) times D_s W_hh
    return J


def _product(W_hh, states, t, factor, order="newest_left", steps=None):
    T, d = states.shape
    rows = list(range(T - 1, t, -1)) if steps is None else steps
    mats = [factor(W_hh, states, s) for s in rows]
    if order == "oldest_left":
        mats = mats[::-1]
    J = torch.eye(d, dtype=states.dtype)
    for m in mats:
        J = J @ m
    return J


def _rnn_jacobian_cases(g) -> list[Case]:
    """fn(W_hh (d, d), states (T, d), t) -> ∂h_T/∂h_t (d, d) for the tanh RNN
    h_s = tanh(W_hh h_{s-1} + ...).

    ``states`` holds h_1..h_T as rows (0-based: row s is h_{s+1}); ``t`` is a 0-based row index and
    the answer is ∂states[-1]/∂states[t] = D_T W_hh D_{T-1} W_hh ... D_{t+1} W_hh with
    D_s = diag(1 - h_s^2).
    """
    cases = []
    for label, T, d, t, dtype, scale in (
        ("d = 4, T = 6, t = 2", 6, 4, 2, torch.float64, 0.5),
        ("d = 5, T = 8, t = 0 (back to the first state)", 8, 5, 0, torch.float64, 0.5),
        ("one step back: t = T - 2", 5, 3, 3, torch.float64, 0.5),
        ("float32 states, d = 6, T = 7, t = 1", 7, 6, 1, torch.float32, 0.5),
        ("saturated states (large inputs)", 6, 4, 1, torch.float64, 4.0),
    ):
        W, states = _tanh_states(g, T, d, dtype, input_scale=scale)
        cases.append(Case(label, (W, states, t)))
    W, states = _tanh_states(g, 4, 3)
    cases.append(
        Case(
            "t = T - 1: the last state itself",
            (W, states, 3),
            hint="∂h_T/∂h_T is the identity matrix: with no step in between, the product is empty",
        )
    )
    return cases


def _D(W, h, s):
    return (1 - h[s] ** 2)[:, None] * W  # D_s W_hh


check_rnn_jacobian = Exercise(
    _rnn_jacobian_ref,
    _rnn_jacobian_cases,
    reimplements=("autograd",),
    diagnoses=[
        (
            "missing the tanh derivative: each step contributes diag(1 − h_s²) · W_hh, "
            "not W_hh alone",
            lambda W, h, t: _product(W, h, t, lambda W, h, s: W),
        ),
        (
            "the factors are multiplied in the wrong order: the newest step goes on the left, "
            "the factor of row T−1 first, then row T−2's, …, row t+1's last",
            lambda W, h, t: _product(W, h, t, _D, "oldest_left"),
        ),
        (
            "diag(1 − h_s²) is on the wrong side: ∂h_s/∂h_{s−1} = diag(1 − h_s²) · W_hh "
            "(scale the rows of W_hh), not W_hh · diag(1 − h_s²)",
            lambda W, h, t: _product(W, h, t, lambda W, h, s: W * (1 - h[s] ** 2)[None, :]),
        ),
        (
            "off by one: the factors diag(1 − states[s]²) · W_hh belong to the rows after t, "
            "s = t+1 … T−1, not s = t … T−2",
            lambda W, h, t: _product(W, h, t, lambda W, h, s: _D(W, h, s - 1)),
        ),
        (
            "one step too many: the product runs over the steps after h_t only (rows t+1 … T−1); "
            "for t = T−1 it is the identity",
            lambda W, h, t: _product(W, h, t, _D, steps=list(range(h.shape[0] - 1, t - 1, -1))),
        ),
        (
            "one step too few: the newest factor, that of row T−1 (the last state), belongs to "
            "the product too; it runs over rows T−1 down to t+1",
            lambda W, h, t: (
                _product(W, h, t, _D, steps=list(range(h.shape[0] - 2, t, -1)))
                if t < h.shape[0] - 1
                else None
            ),
        ),
        (
            "the states are already tanh(a_s), so tanh'(a_s) = 1 − h_s²; do not apply tanh again",
            lambda W, h, t: _product(
                W, h, t, lambda W, h, s: (1 - torch.tanh(h[s]) ** 2)[:, None] * W
            ),
        ),
        (
            "W_hh is transposed: ∂(W_hh h)/∂h = W_hh",
            lambda W, h, t: _product(W, h, t, lambda W, h, s: _D(W.T, h, s)),
        ),
        (
            "the result is transposed: entry (a, b) is ∂h_T[a]/∂h_t[b]",
            lambda W, h, t: _rnn_jacobian_ref(W, h, t).T,
        ),
    ],
)


# ------------------------------------------------------------------------- 2: effective span


def _softmax_rows(g, *shape, scale=2.0):
    s = randn(g, *shape, scale=scale)
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def _distances(w):
    T, S = w.shape[-2], w.shape[-1]
    return (torch.arange(T)[:, None] - torch.arange(S)[None, :]).abs()  # (T, S)


SPAN_ZERO = "when no weight exceeds eps the span is 0"


def _effective_span_cases(g) -> list[Case]:
    """fn(weights (..., T, S), eps) -> (..., T) int64: max{|i - j| : A_ij > eps}, 0 if none
    (Eq. 5.4.4)."""
    causal = _softmax_rows(g, 6, 6)
    causal = causal * torch.ones(6, 6).tril()
    causal = causal / causal.sum(-1, keepdim=True)
    banded = torch.zeros(7, 7, dtype=torch.float64)
    for i in range(7):
        for j in range(max(0, i - 2), min(7, i + 3)):
            banded[i, j] = 1.0 / (1 + abs(i - j))
    banded = banded / banded.sum(-1, keepdim=True)
    exact = torch.tensor(
        [[0.5, 0.25, 0.25], [0.25, 0.25, 0.5], [0.1, 0.25, 0.65]], dtype=torch.float64
    )
    hint = _dtype_hint(torch.int64, INTEGER_DISTANCES)
    return [
        Case("causal softmax weights, T = S = 6, eps = 0.1", (causal, 0.1), hint=hint),
        Case("banded weights (keys up to 2 away), eps = 0.05", (banded, 0.05), hint=hint),
        Case(
            "a (2, 3, 5, 5) batch of weights, eps = 0.2",
            (_softmax_rows(g, 2, 3, 5, 5), 0.2),
            hint=hint,
        ),
        Case(
            "cross-attention: 3 queries over 7 keys, eps = 0.1",
            (_softmax_rows(g, 3, 7), 0.1),
            hint=hint,
            on_error=(
                "here T ≠ S: the |i − j| table is (T, S), i over the queries "
                "(weights.shape[-2], the rows) and j over the keys (weights.shape[-1])"
            ),
        ),
        Case(
            "uniform weights 1/8 with eps = 0.2: no key counts, span 0",
            (torch.full((4, 8), 0.125), 0.2),
            hint=lambda got, exp: hint(got, exp) or say(SPAN_ZERO),
        ),
        Case(
            "weights exactly equal to eps (0.25) do not count: A_ij > eps is strict",
            (exact, 0.25),
            hint=hint,
        ),
        Case("float32 weights, eps = 0.15", (_softmax_rows(g, 5, 5).float(), 0.15), hint=hint),
    ]


def _wrong_ge(w, eps):
    d = _distances(w)
    return torch.where(w >= eps, d, torch.zeros_like(d)).amax(dim=-1)


def _wrong_argmax(w, eps):
    d = _distances(w).expand(w.shape)
    return d.gather(-1, w.argmax(dim=-1, keepdim=True))[..., 0]


def _wrong_signed(w, eps):
    T, S = w.shape[-2], w.shape[-1]
    d = torch.arange(T)[:, None] - torch.arange(S)[None, :]
    return torch.where(w > eps, d, torch.zeros_like(d)).amax(dim=-1).clamp(min=0)


def _wrong_axis(w, eps):
    if w.shape[-1] != w.shape[-2]:
        return None
    d = _distances(w)
    return torch.where(w > eps, d, torch.zeros_like(d)).amax(dim=-2)


def _counted_positions(w, eps):
    d = _distances(w)
    return torch.where(w > eps, d + 1, torch.zeros_like(d)).amax(dim=-1)


def _wrong_index(w, eps):
    j = torch.arange(w.shape[-1]).expand(w.shape)
    return torch.where(w > eps, j, torch.zeros_like(j)).amax(dim=-1)


check_effective_span = Exercise(
    _effective_span_ref,
    _effective_span_cases,
    diagnoses=[
        ("weights equal to eps were counted: Eq. (5.4.4) keeps A_ij > eps (strictly)", _wrong_ge),
        (
            "returned the distance of the largest weight; "
            "the span is the farthest key whose weight exceeds eps",
            _wrong_argmax,
        ),
        (
            "keys after the query (j > i) must count too: use the absolute distance |i − j|",
            _wrong_signed,
        ),
        ("returned the key index j; the span is the distance |i − j| from the query", _wrong_index),
        (
            "counted the keys above eps (that is the coverage |R(i)| of Eq. 14.3.8); "
            "the span is the largest |i − j|",
            lambda w, eps: _coverage_ref(w, eps),
        ),
        (
            "the maximum was taken over the queries (dim=-2): the span of query i is the "
            "largest distance over its keys j, a max over the last dimension (dim=-1)",
            _wrong_axis,
        ),
        (
            "off by one: the span is the distance |i − j| (0 for the query's own position), "
            "not the number of positions from i to j",
            _counted_positions,
        ),
        (
            "off by one: the span is the distance |i − j| (0 for the query's own position), "
            "not the number of positions from i to j",
            lambda w, eps: _effective_span_ref(w, eps) + 1,
        ),
    ],
)


# ------------------------------------------------------------------------- 3: path lengths


def _path_lengths_ref(weights, eps):
    """dist[i, j]: fewest steps along edges i -> k (A_ik > eps) from i to j; 0 on the diagonal,
    inf if none.
    """
    return _shortest_path_lengths(weights > eps)


def _encode(dist):
    """(finite part with inf -> 0, 1.0 where unreachable): the engine compares finite tensors
    only.
    """
    if not isinstance(dist, _Tensor):
        return dist
    unreachable = torch.isinf(dist)
    return torch.where(unreachable, torch.zeros_like(dist), dist), unreachable.to(torch.float64)


RETURN_FLOAT64 = (
    "return a float64 tensor whatever the weights' dtype (a float, so that unreachable pairs can "
    "be inf), got {got}"
)
UNREACHABLE_INF = "pairs that no path connects must be float('inf') (not -1, 0 or n)"
REACHABLE_INF = "some pairs marked unreachable (inf) are connected by a path"


def _unreachable_hint(got, expected):
    if not isinstance(got, tuple) or not isinstance(got[0], _Tensor):
        return None
    if got[0].dtype != torch.float64:
        return say(RETURN_FLOAT64, got=got[0].dtype)
    if got[0].shape == expected[0].shape and not bool((got[1] == expected[1]).all()):
        if bool((got[1] <= expected[1]).all()):
            return say(UNREACHABLE_INF)
        return say(REACHABLE_INF)
    return None


def _path_lengths_cases(g) -> list[Case]:
    """fn(weights (n, n), eps) -> dist (n, n) float64 by breadth-first search (Eq. 5.4.5).

    Edge i -> j when weights[i, j] > eps (position i reads position j in one step); dist[i, i] = 0,
    dist[i, j] = the fewest edges on a path from i to j, inf when there is none.
    """
    n = 6
    full = _softmax_rows(g, n, n, scale=1.0)
    causal = full * torch.ones(n, n, dtype=torch.float64).tril()
    causal = causal / causal.sum(-1, keepdim=True)
    chain = torch.zeros(7, 7, dtype=torch.float64)  # an RNN: i reads itself and i - 1
    for i in range(7):
        chain[i, i] = 0.6 if i else 1.0
        if i:
            chain[i, i - 1] = 0.4
    random = torch.rand(7, 7, generator=g, dtype=torch.float64)
    random = random * (torch.rand(7, 7, generator=g, dtype=torch.float64) < 0.3)
    two_parts = torch.zeros(6, 6, dtype=torch.float64)
    two_parts[:3, :3] = 1 / 3
    two_parts[3:, 3:] = 1 / 3
    peaked = _softmax_rows(g, 8, 8, scale=3.0)
    hint = _unreachable_hint
    return [
        Case("softmax weights, eps = 0: every pair is one step apart", (full, 0.0), hint=hint),
        # the chain before the causal weights: an answer that takes edges both ways fails on the
        # chain, named; on the causal weights at eps = 0 it would look like counting weights
        # equal to eps as edges
        Case("a recurrent chain (i reads i and i − 1), eps = 0.1", (chain, 0.1), hint=hint),
        Case("causal softmax weights, eps = 0", (causal, 0.0), hint=hint),
        Case("a sparse random graph, eps = 0.5", (random, 0.5), hint=hint),
        Case("two blocks that never exchange information, eps = 0.1", (two_parts, 0.1), hint=hint),
        Case("peaked softmax weights, eps = 0.1", (peaked, 0.1), hint=hint),
        Case("float32 weights, eps = 0.1", (peaked.float(), 0.1), hint=hint),
    ]


def _one_hop(w, eps):
    d = torch.where(w > eps, 1.0, math.inf).to(torch.float64)
    d.fill_diagonal_(0.0)
    return d


def _no_zero_diagonal(w, eps):
    """A search that never sets dist[i, i] = 0: the diagonal holds the shortest cycle through i
    (1 for a self-edge A_ii > eps), or inf."""
    d = _path_lengths_ref(w, eps)
    steps = torch.where(w > eps, 1.0 + d.T, math.inf).to(torch.float64)  # i -> k, then k ~> i
    cycle = steps.amin(dim=-1)  # (n,)
    off = ~torch.eye(w.shape[0], dtype=torch.bool)
    return torch.where(off, d, torch.diag(cycle))


def _encoded(wrong):
    return lambda w, eps: _encode(wrong(w, eps))


def _encoded_path_lengths(weights, eps):
    return _encode(_path_lengths_ref(weights, eps))


check_path_lengths = Exercise(
    _encoded_path_lengths,
    _path_lengths_cases,
    convert=_encode,
    refuse=[_shortest_path_lengths, _path_lengths_from, _layers_to_connect],
    outputs=("distances", "unreachable pairs (inf)"),
    order=(1, 0),
    diagnoses=[
        (
            "the result is transposed: weights[i, j] > eps is an edge from i to j (i reads j), "
            "and dist[i, j] counts the steps from i to j",
            _encoded(lambda w, eps: _path_lengths_ref(w, eps).T),
        ),
        (
            "only one step was taken: paths of several steps (i → k → j) count too; "
            "repeat until nothing new is reached",
            _encoded(_one_hop),
        ),
        (
            "counted positions on the path instead of steps: a direct edge is distance 1, "
            "the diagonal 0",
            _encoded(
                lambda w, eps: (
                    _path_lengths_ref(w, eps) + 1 - torch.eye(w.shape[0], dtype=torch.float64)
                )
            ),
        ),
        (
            "the diagonal must be 0 (Eq. 5.4.5: dist(i, i) = 0), even where A_ii > eps",
            _encoded(_no_zero_diagonal),
        ),
        (
            "weights equal to eps were counted as edges: an edge i → j needs "
            "weights[i, j] > eps (strictly)",
            _encoded(lambda w, eps: _shortest_path_lengths(w >= eps)),
        ),
        (
            "the edges were taken both ways: weights[i, j] > eps is an edge from i to j only "
            "(i reads j); j does not read i unless weights[j, i] > eps",
            _encoded(lambda w, eps: _shortest_path_lengths((w > eps) | (w > eps).T)),
        ),
    ],
)


# ------------------------------------------------------------------------- 4: clipping


def _clip_ref(grads, max_norm):
    return _clip_gradients_ref(grads, max_norm)[0]


def _scaled(grads, scale):
    return tuple(gr * scale for gr in grads)


def _global_norm(grads):
    return math.sqrt(sum(float((gr.double() ** 2).sum()) for gr in grads))


def _with_norm(grads, norm):
    """``grads`` rescaled to the global norm ``norm``."""
    return _scaled(grads, norm / _global_norm(grads))


def _clip_cases(g) -> list[Case]:
    """fn(grads (a tuple of tensors), max_norm) -> tuple of clipped gradients (Pascanu et al. 2013,
    Alg. 1).

    Global norm ||g|| = sqrt(sum of every entry squared, over all tensors); if ||g|| > max_norm
    every tensor is multiplied by max_norm / ||g|| (the reference uses max_norm / (||g|| + 1e-6)
    capped at 1, as torch; the rule as written, without ε, passes too: see ``_clip_scale``).
    """
    return [
        Case("one (3, 4) gradient of norm ~35, max_norm = 1", ((randn(g, 3, 4, scale=10.0),), 1.0)),
        Case(
            "three gradients (a matrix, a vector, a scalar), global norm above max_norm = 2",
            ((randn(g, 4, 4, scale=3.0), randn(g, 4, scale=0.5), randn(g, (), scale=2.0)), 2.0),
        ),
        Case(
            "gradients whose global norm is below max_norm = 100: unchanged",
            ((randn(g, 5), randn(g, 2, 3)), 100.0),
            hint="when the global norm is at most max_norm, the gradients must stay as they are",
        ),
        Case(
            "gradients of global norm 4, max_norm = 9 (above √9, below 9): unchanged",
            (_with_norm((randn(g, 3, 3), randn(g, 4)), 4.0), 9.0),
            hint="when the global norm is at most max_norm, the gradients must stay as they are",
        ),
        Case(
            "exploding gradients (norm ~1e6), max_norm = 5",
            ((randn(g, 6, scale=1e6), randn(g, 2, 2, scale=1e5)), 5.0),
        ),
        Case(
            "all-zero gradients (norm 0)",
            ((torch.zeros(3, dtype=torch.float64), torch.zeros(2, 2, dtype=torch.float64)), 1.0),
            hint="a zero gradient must stay zero (no division by a zero norm)",
            on_error=(
                "the global norm is 0 here: divide by it only when ||g|| > max_norm (or add a "
                "small ε, as torch does: max_norm / (||g|| + 1e-6)); a zero gradient stays zero"
            ),
        ),
        Case(
            "float32 gradients, max_norm = 0.5",
            ((randn(g, 8, dtype=torch.float32, scale=2.0), randn(g, 3, dtype=torch.float32)), 0.5),
        ),
    ]


def _per_tensor(grads, max_norm):
    return tuple(_clip_gradients_ref((gr,), max_norm)[0][0] for gr in grads)


def _by_value(grads, max_norm):
    return tuple(gr.clamp(-max_norm, max_norm) for gr in grads)


def _always(grads, max_norm):
    n = _global_norm(grads)
    return _scaled(grads, max_norm / n) if n > 0 else None


def _sum_of_norms(grads, max_norm):
    n = sum(math.sqrt(float((gr.double() ** 2).sum())) for gr in grads)
    return _scaled(grads, min(1.0, max_norm / n)) if n > 0 and len(grads) > 1 else None


def _squared(grads, max_norm):
    n = _global_norm(grads) ** 2
    return _scaled(grads, min(1.0, max_norm / n)) if n > 0 else None


def _squared_compared(grads, max_norm):
    n = _global_norm(grads)
    return _scaled(grads, max_norm / n) if n * n > max_norm >= n else None


def _never_clipped(grads, max_norm):  # max(1, ·) instead of min(1, ·)
    n = _global_norm(grads)
    return tuple(grads) if n > max_norm else None


def _inverted(grads, max_norm):
    n = _global_norm(grads)
    return _scaled(grads, n / max_norm) if n > max_norm else None


def _root_mean_square(grads, max_norm):
    count = sum(gr.numel() for gr in grads)
    n = _global_norm(grads) / math.sqrt(count) if count else 0.0
    return _scaled(grads, min(1.0, max_norm / n)) if n > 0 and count > 1 else None


# Where ||g|| > max_norm, the rule as written (scale max_norm / ||g||) and torch's
# max_norm / (||g|| + 1e-6) (the reference's) are both right, and so is an ε inside the square
# root: they differ by about ε / ||g||, far above float64's precision. Answers are compared to
# this relative precision at least; every mistake the diagnoses name is off by far more.
_EPSILON_CONVENTIONS = 1e-6


def _clip_scale(grads, max_norm) -> float:
    """The magnitude the clipped answer is compared at: the gradients' own largest entry, and at
    least the one at which the tolerance (PRECISION units of the dtype's precision) reaches the
    relative difference between the ε conventions, ``_EPSILON_CONVENTIONS``."""
    largest = max((float(gr.abs().max()) for gr in grads if gr.numel()), default=0.0)
    dtype = next((gr.dtype for gr in grads if gr.is_floating_point()), torch.float64)
    return max(largest, _EPSILON_CONVENTIONS / (PRECISION * torch.finfo(dtype).eps))


check_clip_gradients = Exercise(
    _clip_ref,
    _clip_cases,
    reimplements=("gradient_clipping",),
    refuse=[_clip_gradients_ref, _clip_grad_norm_package],
    scale=_clip_scale,
    diagnoses=[
        (
            "clipped each tensor by its own norm: "
            "Pascanu's rule uses one global norm over all gradients together",
            _per_tensor,
        ),
        (
            "clipped the values (clamp): that is clipping by value, which changes the gradient's "
            "direction; rescale all gradients by max_norm / ||g|| instead",
            _by_value,
        ),
        (
            "compared the squared norm with max_norm: clip when ||g|| > max_norm, where ||g|| is "
            "the square root of the sum of squares",
            _squared_compared,
        ),
        (
            "rescaled even though the norm was already small enough: "
            "multiply only when ||g|| > max_norm (scale = min(1, max_norm / ||g||))",
            _always,
        ),
        (
            "summed the tensors' norms; "
            "the global norm is the square root of the sum of all squared entries",
            _sum_of_norms,
        ),
        ("used the squared norm; take the square root of the sum of squares", _squared),
        (
            "returned the gradients unchanged although ||g|| > max_norm: then every tensor is "
            "multiplied by max_norm / ||g|| (scale = min(1, max_norm / ||g||), not max)",
            _never_clipped,
        ),
        (
            "the ratio is upside down: the scale is max_norm / ||g||, which is < 1 when the "
            "gradients are too large",
            _inverted,
        ),
        (
            "used the root mean square of the entries; the global norm is the square root of "
            "the SUM of all squared entries, not of their mean",
            _root_mean_square,
        ),
    ],
)


__all__ = [
    "check_clip_gradients",
    "check_effective_span",
    "check_path_lengths",
    "check_rnn_jacobian",
]


# what the hints above say (``attncourse.exercises.messages``)
SENTENCES = (
    RETURN_DTYPE,
    INTEGER_DISTANCES,
    SPAN_ZERO,
    RETURN_FLOAT64,
    UNREACHABLE_INF,
    REACHABLE_INF,
)
