"""attncourse.flow: every statistic against the source's own loops or an independent formula,
reachability against brute-force path enumeration, max flow against brute-force minimum cuts and a
separate Ford–Fulkerson search written out here, and bad input."""

import itertools
import math

import pytest
import torch
from torch.testing import assert_close

from attncourse.attention import scaled_dot_product_attention, softmax
from attncourse.flow import (
    attention_flow,
    attention_rollout,
    directional_flow,
    flow_network,
    flow_shares,
    flow_statistics,
    layers_to_reach,
    max_flow,
    mean_attention_distance,
    reachability,
    top_sources,
)
from attncourse.masks import block_mask, causal_mask, local_mask, strided_mask
from attncourse.metrics import attention_entropy

DT = torch.float64


def random_weights(*shape, seed=0, causal=False):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(*shape, generator=g, dtype=DT) * 2
    mask = causal_mask(shape[-2], shape[-1]) if causal else None
    return softmax(scores, mask=mask)


# ------------------------------------------------------------------------ flow statistics


def source_002_statistics(A):
    """Source 002's ``analyze_flow_statistics`` loops, as printed (one (T, T) matrix)."""
    seq_len = A.shape[0]
    forward = sum(A[i][j] for i in range(seq_len) for j in range(i))
    backward = sum(A[i][j] for i in range(seq_len) for j in range(i + 1, seq_len))
    self_attention = sum(A[i][i] for i in range(seq_len))
    return float(forward), float(backward), float(self_attention)


def test_directional_flow_matches_the_source_loops_for_every_batch_and_head():
    w = random_weights(2, 3, 6, 6)
    split = directional_flow(w)
    assert split.forward.shape == (2, 3)
    for b, h in itertools.product(range(2), range(3)):
        fwd, bwd, own = source_002_statistics(w[b, h])
        assert split.forward[b, h].item() == pytest.approx(fwd, abs=1e-12)
        assert split.backward[b, h].item() == pytest.approx(bwd, abs=1e-12)
        assert split.self_loop[b, h].item() == pytest.approx(own, abs=1e-12)
    # each row sums to 1, so the three parts add up to T
    assert_close(
        split.forward + split.backward + split.self_loop, torch.full((2, 3), 6.0, dtype=DT)
    )


def test_causal_weights_have_no_backward_flow_and_uniform_weights_are_symmetric():
    causal = random_weights(4, 4, 7, 7, causal=True)
    assert torch.equal(directional_flow(causal).backward, torch.zeros(4, 4, dtype=DT))
    T = 8
    uniform = torch.full((T, T), 1 / T, dtype=DT)
    split = directional_flow(uniform)
    assert split.forward.item() == pytest.approx(split.backward.item())
    assert split.forward.item() == pytest.approx((T - 1) / 2)
    assert split.self_loop.item() == pytest.approx(1.0)
    shares = flow_shares(uniform)
    assert shares.self_loop.item() == pytest.approx(1 / T)
    assert sum(s.item() for s in shares) == pytest.approx(1.0)
    assert all(s.item() == 0 for s in flow_shares(torch.zeros(3, 3, dtype=DT)))


def test_flow_statistics_total_and_mean_are_fixed_by_the_softmax_alone():
    w = random_weights(2, 3, 5, 5)
    stats = flow_statistics(w)
    assert_close(stats.total, torch.full((2, 3), 5.0, dtype=DT))  # T queries, each summing to 1
    assert_close(stats.mean, torch.full((2, 3), 1 / 5, dtype=DT))  # 1/S
    assert_close(stats.max, w.flatten(-2).max(-1).values)
    assert_close(stats.entropy, attention_entropy(w).mean(-1))
    assert_close(stats.ratio, stats.forward / stats.backward)
    causal = flow_statistics(random_weights(5, 5, causal=True))
    assert math.isinf(causal.ratio.item()) and causal.backward.item() == 0
    eye = flow_statistics(torch.eye(4, dtype=DT))
    assert math.isnan(eye.ratio.item()) and eye.self_loop.item() == 4


def test_flow_statistics_and_distance_are_differentiable():
    w = random_weights(1, 2, 4, 4).requires_grad_(True)
    torch.autograd.gradcheck(lambda w: directional_flow(w).backward, (w,))
    torch.autograd.gradcheck(lambda w: flow_statistics(w).entropy, (w,))
    torch.autograd.gradcheck(lambda w: mean_attention_distance(w), (w,))


def test_top_sources_agree_with_a_sort_of_each_row():
    w = random_weights(2, 5, 7)
    values, indices = top_sources(w, 3)
    for b, i in itertools.product(range(2), range(5)):
        order = sorted(range(7), key=lambda j, b=b, i=i: -w[b, i, j].item())[:3]
        assert indices[b, i].tolist() == order
        assert_close(values[b, i], w[b, i, order])


# ------------------------------------------------------------------ mean attention distance


@pytest.mark.parametrize("T", [1, 4, 16])
def test_uniform_attention_has_mean_distance_t_squared_minus_one_over_3t(T):
    uniform = torch.full((2, T, T), 1 / T, dtype=DT)
    assert_close(
        mean_attention_distance(uniform), torch.full((2,), (T * T - 1) / (3 * T), dtype=DT)
    )


def test_mean_attention_distance_matches_a_double_loop_and_reads_offsets_exactly():
    w = random_weights(3, 4, 6)  # cross-attention shape: 4 queries, 6 keys
    loop = torch.tensor(
        [
            [sum(w[b, i, j].item() * abs(i - j) for j in range(6)) for i in range(4)]
            for b in range(3)
        ],
        dtype=DT,
    )
    assert_close(mean_attention_distance(w, per_query=True), loop)
    assert_close(mean_attention_distance(w), loop.mean(-1))
    previous = torch.zeros(5, 5, dtype=DT)
    previous[0, 0] = 1
    previous[torch.arange(1, 5), torch.arange(0, 4)] = 1  # each query reads i - 1
    assert mean_attention_distance(previous, per_query=True).tolist() == [0, 1, 1, 1, 1]


# --------------------------------------------------------------------------- reachability


def brute_force_reach(mask, layers, residual):
    """R[i, j]: is there a sequence i = k_0, k_1, ..., k_L = j with each step an edge?"""
    T = mask.shape[0]
    step = mask | torch.eye(T, dtype=torch.bool) if residual else mask
    R = torch.zeros(T, T, dtype=torch.bool)
    for i, j in itertools.product(range(T), range(T)):
        for middle in itertools.product(range(T), repeat=layers - 1):
            path = (i, *middle, j)
            if all(step[a, b] for a, b in zip(path[:-1], path[1:])):
                R[i, j] = True
                break
    return R


@pytest.mark.parametrize(
    "mask",
    [
        causal_mask(6),
        local_mask(6, 1),
        strided_mask(6, 2),
        block_mask(6, 3),
        torch.rand(6, 6, generator=torch.Generator().manual_seed(2)) < 0.3,
    ],
    ids=["causal", "local", "strided", "block", "random"],
)
@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("residual", [True, False])
def test_reachability_is_the_set_of_layer_paths(mask, layers, residual):
    assert torch.equal(
        reachability(mask, layers, residual), brute_force_reach(mask, layers, residual)
    )


@pytest.mark.parametrize(
    "mask",
    [causal_mask(9), local_mask(9, 2), strided_mask(9, 3), block_mask(9, 3)],
    ids=["causal", "local", "strided", "block"],
)
def test_layers_to_reach_is_the_first_layer_count_at_which_reachability_turns_true(mask):
    hops = layers_to_reach(mask)
    for L in range(0, 10):
        assert torch.equal(hops <= L, reachability(mask, L))


def test_known_depths_causal_one_layer_strided_two_local_window_ceil_block_never():
    T = 16
    assert layers_to_reach(causal_mask(T))[causal_mask(T)].max() == 1
    assert math.isinf(layers_to_reach(causal_mask(T))[0, 1])  # the future never reaches the past
    strided = layers_to_reach(strided_mask(T, 4))  # Child et al. 2019: two layers
    assert strided[causal_mask(T)].max() == 2
    local = layers_to_reach(local_mask(T, 3))
    i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
    assert torch.equal(local, torch.ceil((i - j).abs() / 3).double())
    block = layers_to_reach(block_mask(T, 4))
    assert math.isinf(block[0, 4]) and block[0, 3] == 1
    assert torch.equal(reachability(torch.ones(4, 4, dtype=torch.bool), 1), torch.ones(4, 4).bool())


def test_a_cross_attention_mask_is_its_own_one_layer_reachability():
    cross = torch.ones(3, 5, dtype=torch.bool)
    assert torch.equal(reachability(cross, 1, residual=False), cross)
    with pytest.raises(ValueError, match="square"):
        reachability(cross, 2)


# -------------------------------------------------------------------- rollout and max flow


def test_rollout_is_the_product_of_half_identity_half_head_mean_matrices():
    layers = [random_weights(2, 3, 5, 5, seed=s) for s in range(3)]
    expected = []
    for b in range(2):
        R = torch.eye(5, dtype=DT)
        for w in layers:
            A = 0.5 * torch.eye(5, dtype=DT) + 0.5 * w[b].mean(0)
            R = A @ R
        expected.append(R)
    rolled = attention_rollout(layers)
    assert_close(rolled, torch.stack(expected))
    assert_close(rolled.sum(-1), torch.ones(2, 5, dtype=DT))
    assert_close(attention_rollout(layers[:1], residual=0.0), layers[0].mean(1))
    ws = [w.clone().requires_grad_(True) for w in layers[:2]]
    torch.autograd.gradcheck(lambda a, b: attention_rollout([a, b]), tuple(ws))


def test_rollout_keeps_a_causal_stack_causal():
    layers = [random_weights(1, 2, 6, 6, seed=s, causal=True) for s in range(3)]
    rolled = attention_rollout(layers)[0]
    assert torch.equal(rolled > 0, causal_mask(6))


def brute_force_min_cut(capacity, s, t):
    """Max-flow min-cut theorem: the smallest total capacity of edges leaving a set that holds s
    but not t, over all such sets."""
    n = len(capacity)
    others = [v for v in range(n) if v not in (s, t)]
    best = math.inf
    for bits in itertools.product((0, 1), repeat=len(others)):
        side = {s} | {v for v, bit in zip(others, bits) if bit}
        cut = sum(capacity[u][v] for u in side for v in range(n) if v not in side)
        best = min(best, cut)
    return best


def ford_fulkerson(capacity, s, t):
    """Depth-first augmenting paths on a residual matrix, written independently of the package."""
    n = len(capacity)
    residual = [list(map(float, r)) for r in capacity]
    total = 0.0
    while True:
        parent, stack = {s: None}, [s]
        while stack and t not in parent:
            u = stack.pop()
            for v in range(n):
                if v not in parent and residual[u][v] > 1e-12:
                    parent[v] = u
                    stack.append(v)
        if t not in parent:
            return total
        path, v = [], t
        while parent[v] is not None:
            path.append((parent[v], v))
            v = parent[v]
        bottleneck = min(residual[u][v] for u, v in path)
        for u, v in path:
            residual[u][v] -= bottleneck
            residual[v][u] += bottleneck
        total += bottleneck


@pytest.mark.parametrize("seed", range(6))
def test_max_flow_equals_the_brute_force_minimum_cut_and_ford_fulkerson(seed):
    g = torch.Generator().manual_seed(seed)
    n = 8
    capacity = torch.rand(n, n, generator=g, dtype=DT) * (torch.rand(n, n, generator=g) < 0.5)
    capacity.fill_diagonal_(0)
    cap = capacity.tolist()
    value = max_flow(capacity, 0, n - 1)
    assert value == pytest.approx(brute_force_min_cut(cap, 0, n - 1), abs=1e-9)
    assert value == pytest.approx(ford_fulkerson(cap, 0, n - 1), abs=1e-9)


def test_attention_flow_for_one_and_two_layers_has_a_closed_form():
    layers = [random_weights(2, 3, 5, 5, seed=s) for s in range(2)]
    A1 = 0.5 * torch.eye(5, dtype=DT) + 0.5 * layers[0].mean(1)  # (B, T, T)
    A2 = 0.5 * torch.eye(5, dtype=DT) + 0.5 * layers[1].mean(1)
    assert_close(attention_flow(layers[:1]), A1)  # one layer: the single edge j -> i
    # two layers: the paths j -> k -> i share no edge, so the flow is sum_k min(A1[k, j], A2[i, k])
    closed = torch.minimum(A1[:, None, :, :], A2[:, :, :, None]).sum(-2)  # (B, i, j)
    assert_close(attention_flow(layers), closed)
    rows = attention_flow(layers, queries=torch.tensor([4, 1]))
    assert_close(rows, closed[torch.arange(2), torch.tensor([4, 1])])
    assert_close(attention_flow([w[0] for w in layers], queries=2), closed[0, 2])


def test_attention_flow_of_a_deeper_stack_matches_an_independent_max_flow_and_is_bounded():
    layers = [random_weights(1, 2, 4, 4, seed=s) for s in range(3)]
    flow = attention_flow(layers)[0]  # (T, T)
    matrices = [0.5 * torch.eye(4, dtype=DT) + 0.5 * w[0].mean(0) for w in layers]
    cap = flow_network(matrices).tolist()
    for i, j in itertools.product(range(4), range(4)):
        assert flow[i, j].item() == pytest.approx(ford_fulkerson(cap, j, 3 * 4 + i), abs=1e-9)
    assert (flow <= 1 + 1e-12).all()  # the top node receives at most its row sum, 1


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: directional_flow(torch.ones(3, 3, dtype=torch.long)), "floating-point"),
        (lambda: directional_flow(torch.rand(2, 3, 4)), "T == S"),
        (lambda: directional_flow(-torch.rand(3, 3)), ">= 0"),
        (lambda: flow_statistics(torch.rand(5)), "at least 2-D"),
        (lambda: top_sources(torch.rand(3, 4), 5), "at most"),
        (lambda: top_sources(torch.rand(3, 4), 0), "positive int"),
        (lambda: mean_attention_distance(torch.ones(2, 2, dtype=torch.bool)), "floating-point"),
        (lambda: reachability(torch.ones(3, 3), 2), "boolean"),
        (lambda: reachability(causal_mask(3), -1), "int >= 0"),
        (lambda: layers_to_reach(torch.ones(3, 4, dtype=torch.bool)), "square"),
        (lambda: attention_rollout(torch.rand(2, 1, 3, 3)), "sequence of per-layer"),
        (lambda: attention_rollout([]), "at least one layer"),
        (lambda: attention_rollout([torch.rand(3, 3)]), "at least 3-D"),
        (lambda: attention_rollout([torch.rand(1, 3, 3)], residual=1.5), r"\[0, 1\]"),
        (
            lambda: attention_rollout([torch.rand(1, 2, 3, 3), torch.rand(1, 2, 4, 4)]),
            "same shape",
        ),
        (lambda: attention_flow([torch.rand(2, 1, 3, 3)], queries=3), r"0\.\.2"),
        (lambda: attention_flow([torch.rand(2, 1, 3, 3)], queries=torch.zeros(3)), "integer"),
        (lambda: max_flow([[0, 1], [0, 0]], 0, 0), "differ"),
        (lambda: max_flow([[0, -1], [0, 0]], 0, 1), ">= 0"),
        (lambda: max_flow([[0, 1, 0], [0, 0]], 0, 1), "square"),
        (lambda: max_flow([[0, 1], [0, 0]], 0, 2), "node index"),
    ],
)
def test_bad_input_raises_a_value_error_that_says_what_was_expected(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_works_on_the_packages_own_attention_output():
    q = k = v = torch.randn(2, 4, 10, 8)
    _, causal = scaled_dot_product_attention(q, k, v, causal=True)  # (B, H, T, T)
    assert torch.equal(directional_flow(causal).backward, torch.zeros(2, 4))
    assert attention_rollout([causal, causal]).shape == (2, 10, 10)
