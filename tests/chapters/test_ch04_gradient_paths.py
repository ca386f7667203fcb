"""attncourse.chapters.ch04_gradient_paths (chapter 04) and the span/coverage metrics: every
measurement against an independent computation (autograd, torch's own functions, closed forms, a
plain-Python search)."""

import math
from collections import deque

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attncourse.attention import MultiHeadAttention, scaled_dot_product_attention
from attncourse.chapters import ch04_gradient_paths as gp
from attncourse.chapters.ch04_gradient_paths.path_lengths import _rnn_recurrence
from attncourse.chapters.ch04_gradient_paths.widget import _widget_setup
from attncourse.metrics import effective_span, information_coverage
from attncourse.rnn import VanillaRNN

DT = torch.float64


# ------------------------------------------------------------------------------ matrices


@pytest.mark.parametrize("rho", [0.5, 1.0, 1.3])
def test_scaled_orthogonal_has_every_singular_value_and_eigenvalue_rho(rho):
    W = gp.scaled_orthogonal(12, rho, torch.Generator().manual_seed(3))
    assert_close(W @ W.T, rho**2 * torch.eye(12, dtype=DT))
    assert_close(torch.linalg.eigvals(W).abs(), torch.full((12,), rho, dtype=DT))
    assert (
        abs(gp.spectral_radius(W) - rho) < 1e-12 and abs(gp.largest_singular_value(W) - rho) < 1e-12
    )


def test_non_normal_matrix_sits_between_its_bounds_and_grows_before_it_decays():
    W = gp.shifted_identity(16, 0.9, 0.5)
    assert gp.spectral_radius(W) == pytest.approx(0.9) and gp.largest_singular_value(W) > 1.35
    norms = gp.power_norms(W, [1, 50, 200, 1600])
    assert (
        norms[1] > 1e6 and norms[2] > 1e9 and norms[3] < 1e-30
    )  # transient growth, eventual decay
    for k, v in zip([1, 50, 200, 1600], norms):
        assert 0.9**k * (1 - 1e-9) <= v <= gp.largest_singular_value(W) ** k * (1 + 1e-9)
    W2 = torch.tensor([[0.5, 2.0], [0.0, 0.5]], dtype=DT)
    assert (
        gp.largest_singular_value(W2) > 2 and gp.power_norms(W2, [20])[0] < 1e-4
    )  # sigma > 1, yet vanishes


# ------------------------------------------------------------------------------ Jacobians


def test_input_jacobian_equals_torch_autograd_jacobian_for_an_rnn_and_attention():
    rnn = VanillaRNN(3, 5, nonlinearity="tanh").double()
    x = torch.randn(7, 3, dtype=DT)
    ref = torch.autograd.functional.jacobian(lambda x: rnn(x[None])[0, -1], x)  # (5, 7, 3)
    assert_close(gp.input_jacobian(lambda xb: rnn(xb)[:, -1], x), ref)
    mha = MultiHeadAttention(4, 2).double()
    x = torch.randn(6, 4, dtype=DT)
    ref = torch.autograd.functional.jacobian(lambda x: mha(x[None], causal=True)[0][0, -1], x)
    assert_close(gp.input_jacobian(lambda xb: mha(xb, causal=True)[0][:, -1], x), ref)
    assert_close(gp.distance_profile(ref), ref.pow(2).sum((0, 2)).sqrt().flip(0))


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu", "linear"])
def test_rnn_jacobian_profile_is_the_autograd_profile(nonlinearity):
    g = torch.Generator().manual_seed(5)
    rnn = VanillaRNN(3, 6, nonlinearity=nonlinearity, bias=False).double()
    with torch.no_grad():
        rnn.weight_hh.copy_(torch.randn(6, 6, generator=g, dtype=DT) / 2)
    x = torch.randn(15, 3, generator=g, dtype=DT)
    ref = gp.distance_profile(gp.input_jacobian(lambda xb: rnn(xb)[:, -1], x))
    assert_close(gp.rnn_jacobian_profile(rnn.weight_hh, rnn.weight_ih, x, nonlinearity), ref)


def test_linear_rnn_gradient_is_rho_to_the_k_times_sqrt_d_and_its_log_slope_is_ln_rho():
    for rho in (0.8, 1.0, 1.15):
        g = gp.rnn_gradient_norms(rho, "linear", T=30, d=16, seed=1)
        assert_close(g, rho ** torch.arange(30, dtype=DT) * 4.0)
        assert abs(gp.log_slope(g) - math.log(rho)) < 1e-12


def test_tanh_rnn_vanishes_at_rho_one_and_saturates_at_rho_above_one():
    g10 = gp.rnn_gradient_norms(1.0, "tanh", T=60, d=32, seed=0)
    g12 = gp.rnn_gradient_norms(1.2, "tanh", T=60, d=32, seed=0, input_scale=0.3)
    g12_tiny = gp.rnn_gradient_norms(1.2, "tanh", T=60, d=32, seed=0, input_scale=1e-8)
    assert g10[1] / g10[50] > 100 and g12[1] / g12[50] > 1  # decays although rho >= 1
    assert (
        g12_tiny[50] / g12_tiny[1] > 1e3
    )  # near the fixed point 0 it explodes like the linear RNN


def test_attention_last_query_shortcut_and_closed_form_equal_causal_self_attention():
    for seed in (0, 1):
        mha = gp.chapter_attention(16, seed)
        x = gp.chapter_inputs(20, 16, seed)
        ref = gp.distance_profile(
            gp.input_jacobian(lambda xb, mha=mha: mha(xb, causal=True)[0][:, -1], x)
        )
        assert_close(gp.attention_gradient_norms(T=20, d=16, seed=seed), ref)
        assert_close(gp.attention_jacobian_profile(mha, x), ref)
        full = gp.distance_profile(gp.input_jacobian(lambda xb, mha=mha: mha(xb)[0][:, -1], x))
        assert_close(gp.attention_gradient_norms(T=20, d=16, seed=seed, causal=False), full)
    with pytest.raises(ValueError, match="one-head"):
        gp.attention_jacobian_profile(
            MultiHeadAttention(8, 2).double(), torch.randn(5, 8, dtype=DT)
        )


def test_one_attention_layer_has_a_flat_gradient_profile():
    g = torch.stack([gp.attention_gradient_norms(T=60, d=32, seed=s) for s in range(10)])
    assert 0.2 <= float(g[:, 1].mean() / g[:, 50].mean()) <= 5
    assert abs(gp.log_slope(g)) < 0.01


# ------------------------------------------------------------------------------ path lengths


def python_bfs(adjacency):
    n = adjacency.shape[0]
    dist = torch.full((n, n), math.inf, dtype=DT)
    for s in range(n):
        dist[s, s] = 0
        queue = deque([s])
        while queue:
            u = queue.popleft()
            for v in range(n):
                if adjacency[u, v] and math.isinf(dist[s, v]):
                    dist[s, v] = dist[s, u] + 1
                    queue.append(v)
    return dist


@pytest.mark.parametrize("seed", range(4))
def test_shortest_path_lengths_agree_with_a_plain_python_bfs(seed):
    g = torch.Generator().manual_seed(seed)
    adjacency = torch.rand(9, 9, generator=g) < 0.2  # directed, often disconnected
    dist = gp.shortest_path_lengths(adjacency)
    assert torch.equal(dist, python_bfs(adjacency))
    for source in range(9):  # path_lengths_from: how far information at `source` travels
        assert torch.equal(gp.path_lengths_from(adjacency, source), dist[:, source])


def test_path_lengths_of_rnn_conv_attention_and_local_attention():
    n = 40
    assert torch.equal(gp.path_lengths_from(gp.rnn_graph(n), 0), torch.arange(n, dtype=DT))
    rnn_all = gp.shortest_path_lengths(gp.rnn_graph(n))
    assert math.isinf(rnn_all[0, 5]) and rnn_all[5, 0] == 5  # information flows forward only
    assert gp.path_lengths_from(gp.conv_graph(n, 3), 0)[-1] == n - 1
    assert gp.path_lengths_from(gp.conv_graph(n, 5), 0)[-1] == math.ceil((n - 1) / 2)
    assert gp.path_lengths_from(gp.local_attention_graph(n, 8), 0)[-1] == math.ceil((n - 1) / 8)
    x = torch.randn(n, 4, dtype=DT)
    _, A = scaled_dot_product_attention(x, x, x)
    assert gp.max_path_length(A > 0) == 1.0 and gp.attention_graph(A, 0.0).all()


def test_layers_to_connect_with_dilations_doubles_the_reach():
    n = 64
    layers = gp.layers_to_connect([gp.conv_graph(n, 3, 2**k) for k in range(7)], source=0)
    for L in range(1, 6):
        assert torch.equal(layers[: 2**L] <= L, torch.ones(2**L, dtype=torch.bool))
        assert layers[2**L] == L + 1  # reach after L layers: 2^L - 1
    same = gp.layers_to_connect([gp.conv_graph(20, 3)] * 20)
    assert torch.equal(
        same,
        gp.shortest_path_lengths(gp.conv_graph(20, 3)).masked_fill(
            torch.eye(20, dtype=torch.bool), 1.0
        ),
    )


def test_receptive_field_is_2l_plus_1_and_2_to_the_l_plus_1_minus_1_dilated():
    for layers in (1, 3, 5):
        assert gp.receptive_field(gp.conv_stack(layers), 101) == 2 * layers + 1
        assert gp.receptive_field(gp.conv_stack(layers, dilated=True), 101) == 2 ** (layers + 1) - 1
    assert gp.receptive_field(gp.conv_stack(2, kernel_size=5), 101) == 9


# ------------------------------------------------------------------------------ costs


def test_count_flops_agrees_with_torch_flop_counter_and_counts_matrix_vector_products():
    from torch.utils.flop_counter import FlopCounterMode

    x = torch.randn(30, 8, dtype=DT)
    conv = nn.Conv1d(8, 8, 3, padding=1, dtype=DT)
    mha = MultiHeadAttention(8, 2).double()
    for fn, args in (
        (scaled_dot_product_attention, (x, x, x)),
        (conv, (x.T[None],)),
        (mha, (x[None],)),
    ):
        with FlopCounterMode(display=False) as counter:
            fn(*args)
        assert gp.count_flops(fn, *args) == counter.get_total_flops() > 0
    W = torch.randn(8, 8, dtype=DT)
    assert (
        gp.count_flops(lambda: W @ x[0]) == 2 * 64
    )  # a matrix-vector product, which torch's counter skips


def test_autograd_depth_counts_the_longest_chain():
    x = torch.randn(3, requires_grad=True)
    assert gp.autograd_depth(x.exp().sum()) == 3  # sum <- exp <- (the leaf's accumulator)
    assert gp.autograd_depth((x.exp() * 2).sin().sum()) == 5
    assert gp.autograd_depth((x.exp() + x).sum()) == 4  # the longest of two branches
    assert gp.autograd_depth(torch.ones(2)) == 0
    W = torch.randn(2, 4, 4, dtype=DT)
    xs = torch.randn(20, 4, dtype=DT, requires_grad=True)
    d10 = gp.autograd_depth(_rnn_recurrence(xs[:10], W[0], W[1]))
    d20 = gp.autograd_depth(_rnn_recurrence(xs[:20], W[0], W[1]))
    assert d20 - d10 == 30  # 3 dependent operations per step


def test_layer_costs_reproduce_vaswani_table_1_exponents():
    small, large = gp.layer_costs(16, 32), gp.layer_costs(64, 32)
    assert small["self-attention"]["flops"] == 2 * 2 * 16 * 16 * 32  # q k^T and A v
    assert large["self-attention"]["flops"] / small["self-attention"]["flops"] == 16  # n^2
    assert large["recurrent"]["flops"] / small["recurrent"]["flops"] == 4  # n
    assert large["convolutional"]["flops"] / small["convolutional"]["flops"] == 4
    assert small["recurrent"]["flops"] == 2 * 2 * 16 * 32 * 32  # W_xh x and W_hh h per step
    assert large["self-attention"]["sequential"] == small["self-attention"]["sequential"]
    assert large["recurrent"]["sequential"] - small["recurrent"]["sequential"] == 3 * 48
    assert [large[k]["path"] for k in ("self-attention", "recurrent", "convolutional")] == [
        1.0,
        63.0,
        63.0,
    ]


# ------------------------------------------------------------------------------ recall task


def test_recall_batch_targets_the_token_k_positions_before_the_query():
    x, y, k = gp.recall_batch(500, torch.Generator().manual_seed(0), num_tokens=4, max_distance=10)
    assert torch.equal(y, x[torch.arange(500), 10 - k])
    assert torch.equal(x[:, -1], 4 + k - 1) and (x[:, :-1] < 4).all()
    assert set(k.tolist()) == set(range(1, 11))


def test_attention_learns_recall_at_every_distance_and_the_rnn_fades_with_distance():
    torch.manual_seed(0)
    att = gp.RecallAttention()
    gp.train_recall(att, steps=100, seed=0, progress=False)
    acc_att = gp.recall_accuracy(att, samples=2000)
    assert acc_att.min() >= 0.95
    torch.manual_seed(0)
    rnn = gp.RecallRNN()
    losses = gp.train_recall(rnn, steps=250, seed=0, progress=False)
    acc_rnn = gp.recall_accuracy(rnn, samples=2000)
    assert acc_rnn[0] >= 0.9 and acc_rnn[5:].mean() <= 0.5 and losses[-1] < losses[0]
    _, w = att.attention(gp.recall_batch(200, torch.Generator().manual_seed(1))[0])
    assert w.shape == (200, 1, 11, 11) and torch.allclose(w.sum(-1), torch.ones(200, 1, 11))


# ------------------------------------------------------------------------------ clipping


@pytest.mark.parametrize("max_norm", [0.5, 3.0, 1e6])
def test_clip_gradients_matches_torch_clip_grad_norm(max_norm):
    g = torch.Generator().manual_seed(2)
    grads = [
        torch.randn(4, 3, generator=g) * 2,
        torch.randn(5, generator=g),
        torch.randn((), generator=g),
    ]
    params = [nn.Parameter(torch.zeros_like(t)) for t in grads]
    for p, t in zip(params, grads):
        p.grad = t.clone()
    total_ref = torch.nn.utils.clip_grad_norm_(params, max_norm)
    clipped, total = gp.clip_gradients(grads, max_norm)
    assert_close(total, total_ref)
    for c, p in zip(clipped, params):
        assert_close(c, p.grad)
    mine = [nn.Parameter(torch.zeros_like(t)) for t in grads]
    for p, t in zip(mine, grads):
        p.grad = t.clone()
    assert_close(gp.clip_grad_norm_(mine, max_norm), total_ref)
    for a, b in zip(mine, params):
        assert_close(a.grad, b.grad)


def test_clipping_rescues_a_linear_rnn_started_in_the_exploding_regime():
    loss_plain, norm_plain = gp.exploding_training(clip=None)
    loss_clip, norm_clip = gp.exploding_training(clip=1.0)
    assert norm_plain[0] > 1e3 and math.isnan(
        loss_plain[3]
    )  # unclipped: non-finite within a few steps
    assert all(math.isfinite(v) for v in loss_clip) and sum(loss_clip[-10:]) / 10 < 0.1


# ------------------------------------------------------------------------------ information


def test_gaussian_rnn_information_matches_the_closed_form_for_scaled_orthogonal_weights():
    d, T = 8, 40
    for rho in (0.8, 1.0, 1.1):
        W = gp.scaled_orthogonal(d, rho, torch.Generator().manual_seed(0))
        info = gp.gaussian_rnn_information(W, torch.eye(d, dtype=DT), T, [0, 3, 10, 39])
        s = sum(rho ** (2 * m) for m in range(T))
        expected = [d / 2 * math.log(s / (s - rho ** (2 * k))) for k in (0, 3, 10, 39)]
        assert info == pytest.approx(expected, rel=1e-9)


def test_gaussian_rnn_information_against_monte_carlo_free_formula_for_one_dimension():
    # scalar RNN h_T = sum_m w^m u x_{T-m}:
    # I(h_T; x_{T-k}) = 0.5 ln(S / (S - (w^k u)^2)), S = sum_m (w^m u)^2
    w, u, T = torch.tensor([[0.7]], dtype=DT), torch.tensor([[2.0]], dtype=DT), 10
    S = sum((0.7**m * 2) ** 2 for m in range(T))
    assert gp.gaussian_rnn_information(w, u, T, [2])[0] == pytest.approx(
        0.5 * math.log(S / (S - (0.7**2 * 2) ** 2))
    )


def test_information_is_a_monotone_function_of_the_gradient_and_blind_to_its_scale():
    # Lemma 14.3.20 (chapter 04, section 10): I(k) = -(d/2) ln(1 - ||g(k)||^2 / (d s)) exactly
    d, T, rho = 6, 30, 0.85
    W = gp.scaled_orthogonal(d, rho, torch.Generator().manual_seed(1))
    ks = [0, 2, 5, 20]
    info = gp.gaussian_rnn_information(W, torch.eye(d, dtype=DT), T, ks)
    s = sum(rho ** (2 * m) for m in range(T))
    assert info == pytest.approx(
        [-d / 2 * math.log(1 - d * rho ** (2 * k) / (d * s)) for k in ks], rel=1e-9
    )
    scaled = gp.gaussian_rnn_information(W, 1e-3 * torch.eye(d, dtype=DT), T, ks)
    assert scaled == pytest.approx(info, rel=1e-9)


# ------------------------------------------------------------------------------ biases


def test_attention_without_positions_is_permutation_equivariant_and_with_them_is_not():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2).double()
    x = torch.randn(2, 7, 16, dtype=DT)
    perm = torch.tensor([3, 0, 6, 1, 5, 2, 4])
    assert gp.permutation_gap(lambda v: mha(v)[0], x, perm) < 1e-12
    pe = torch.randn(7, 16, dtype=DT)
    assert gp.permutation_gap(lambda v: mha(v + pe)[0], x, perm) > 1e-3
    assert gp.permutation_gap(lambda v: mha(v, causal=True)[0], x, perm) > 1e-3  # a mask orders


def test_convolution_is_shift_equivariant_away_from_the_borders():
    torch.manual_seed(0)
    conv = nn.Conv1d(3, 4, 3, padding=1).double()  # zero padding: the borders differ
    x = torch.randn(2, 3, 30, dtype=DT)
    assert gp.shift_gap(conv, x, 4, border=1) < 1e-12
    assert gp.shift_gap(conv, x, -3, border=1) < 1e-12
    assert gp.shift_gap(conv, x, 4) > 1e-3  # the first shifted position sees the zero padding


def test_attention_stack_pre_ln_is_a_residual_sum_post_ln_is_not():
    torch.manual_seed(0)
    layers = [MultiHeadAttention(8, 2).double() for _ in range(2)]
    norms = [nn.LayerNorm(8).double() for _ in range(2)]
    x = 1.0 + 2.0 * torch.randn(1, 5, 8, dtype=DT)
    with torch.no_grad():
        states, updates = gp.attention_stack(x, layers, norms, "pre")
        assert len(states) == 3 and len(updates) == 2
        assert_close(states[-1], x + updates[0] + updates[1])
        assert_close(updates[1], layers[1](norms[1](states[1]))[0])
        post, post_updates = gp.attention_stack(x, layers, norms, "post")
        assert_close(post[1], norms[0](x + layers[0](x)[0]))  # Eq. (5.4.8)
        assert float((post[-1] - x - sum(post_updates)).abs().max()) > 0.1
    with pytest.raises(ValueError, match="'post' or 'pre'"):
        gp.attention_stack(x, layers, norms, "sandwich")
    with pytest.raises(ValueError, match="one norm per layer"):
        gp.attention_stack(x, layers, norms[:1], "pre")


def test_averaging_information_against_the_gaussian_covariance():
    alpha = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=DT)
    d = 3
    info = gp.averaging_information(alpha, d)
    for j in range(4):  # (o, v_j) per feature: Var o = sum a^2, Cov = a_j, Var v_j = 1
        cov = torch.tensor([[float((alpha**2).sum()), alpha[j]], [alpha[j], 1.0]], dtype=DT)
        expected = d * 0.5 * math.log(float(cov[0, 0]) / float(torch.linalg.det(cov)))
        assert float(info[j]) == pytest.approx(expected, rel=1e-12)
    uniform = gp.averaging_information(torch.full((2, 10), 0.1, dtype=DT), 4)
    assert torch.allclose(uniform, torch.full((2, 10), 2 * math.log(10 / 9), dtype=DT))
    one_hot = gp.averaging_information(torch.tensor([0.0, 1.0, 0.0], dtype=DT))
    assert one_hot[0] == 0 and math.isinf(float(one_hot[1]))


def test_local_task_and_its_models():
    x, y = gp.local_batch(3, 6, 5, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (3, 6)
    assert torch.equal(y[:, 0], x[:, 0]) and torch.equal(y[:, 1:], (x[:, 1:] + x[:, :-1]) % 5)
    torch.manual_seed(0)
    conv, att = gp.LocalConv(5, 8), gp.LocalAttention(5, 6, 8)
    assert conv(x).shape == att(x).shape == (3, 6, 5)
    # causal: the outputs at position i do not depend on later tokens
    x2 = x.clone()
    x2[:, 4:] = (x2[:, 4:] + 1) % 5
    for model in (conv, att):
        assert torch.allclose(model(x)[:, :4], model(x2)[:, :4], atol=1e-6)
    accuracy = gp.train_local(gp.LocalConv(), 16, steps=3, progress=False)
    assert 0.0 <= accuracy <= 1.0


# ------------------------------------------------------------------------------ metrics


def test_effective_span_follows_eq_5_4_4():
    w = torch.tensor([[0.7, 0.2, 0.1, 0.0], [0.05, 0.5, 0.05, 0.4], [0.1, 0.1, 0.1, 0.7]], dtype=DT)
    assert effective_span(w, 0.08).tolist() == [
        2,
        2,
        2,
    ]  # e.g. query 0 reads keys 0, 1, 2: max |0 - 2| = 2
    assert effective_span(w, 0.1).tolist() == [1, 2, 1]  # weights equal to eps do not count
    assert effective_span(w, 0.9).tolist() == [0, 0, 0]  # nothing above eps: 0
    batch = torch.stack([w, w.flip(-1)])[:, None]  # (2, 1, 3, 4)
    assert effective_span(batch, 0.08).tolist() == [[[2, 2, 2]], [[3, 1, 2]]]
    assert effective_span(batch, 0.08).dtype == torch.int64
    local = torch.ones(10, 10, dtype=DT).triu(-3).tril(3)
    assert effective_span(local / local.sum(-1, keepdim=True), 0.0).tolist() == [3] * 10


def test_information_coverage_counts_weights_above_tau_and_respects_the_one_over_tau_bound():
    w = torch.tensor([[0.7, 0.2, 0.1, 0.0], [0.25, 0.25, 0.25, 0.25]], dtype=DT)
    assert information_coverage(w, 0.1).tolist() == [2, 4]
    assert information_coverage(w, 0.25).tolist() == [1, 0]
    samples = torch.distributions.Dirichlet(torch.full((30,), 0.5, dtype=DT)).sample((3000,))[None]
    for tau in (0.02, 0.1, 0.3):
        assert (information_coverage(samples, tau) < 1 / tau).all()
    uniform = torch.full((1, 1, 200, 200), 1 / 200, dtype=DT)
    assert (
        information_coverage(uniform, 0.01).max() == 0 and effective_span(uniform, 0.01).max() == 0
    )


def test_span_and_coverage_reject_bad_input():
    for fn in (effective_span, information_coverage):
        with pytest.raises(ValueError, match="floating-point"):
            fn(torch.ones(3, 3, dtype=torch.long), 0.1)
        with pytest.raises(ValueError, match="at least 2-D"):
            fn(torch.ones(3), 0.1)
        with pytest.raises(ValueError, match=">= 0"):
            fn(torch.ones(3, 3), -0.1)


# ------------------------------------------------------------------------------ widget


def test_gradient_curves_are_the_exact_profiles():
    c = gp.gradient_curves(1.1, "tanh", 40, input_scale=0.5)
    q, x = _widget_setup(32, 0, gp.WIDGET_MAX_LENGTH)
    rnn = VanillaRNN(32, 32, nonlinearity="tanh", bias=False).double()
    with torch.no_grad():
        rnn.weight_hh.copy_(1.1 * q)
        rnn.weight_ih.copy_(torch.eye(32, dtype=DT))
    ref = gp.distance_profile(gp.input_jacobian(lambda xb: rnn(xb)[:, -1], x[:40] * 0.5))
    assert_close(c.rnn, ref)
    mha = gp.chapter_attention(32, 0)
    assert_close(
        c.attention,
        gp.distance_profile(gp.input_jacobian(lambda xb: mha(xb, causal=True)[0][:, -1], x[:40])),
    )
    lin = gp.gradient_curves(0.95, "linear", 50)
    assert_close(lin.rnn, lin.linear_law) and abs(lin.slope - math.log(0.95)) < 1e-12
    with pytest.raises(ValueError, match="length"):
        gp.gradient_curves(1.0, "tanh", 1000)


def test_widget_update_moves_the_lines_and_returns_a_png():
    plot = gp.GradientPathPlot()
    curves, png, caption = gp.gradient_widget_update(plot, 0.9, "linear", 60)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and "rho = 0.90" in caption and "length 60" in caption
    xs, ys = plot._rnn.get_data()
    assert list(xs) == list(range(60)) and ys[10] == pytest.approx(0.9**10 * math.sqrt(32))
    _, png2, _ = gp.gradient_widget_update(plot, 1.3, "linear", 200)
    assert png2 != png and plot._rnn.get_data()[1][-1] == pytest.approx(
        2e20
    )  # clipped at the axis edge


def test_widget_controls_redraw():
    box = gp.gradient_widget(rho=1.0, nonlinearity="linear", length=50)
    image = box.children[-1]
    before = image.value
    box.controls["rho"].value = 1.2
    assert image.value != before and "rho = 1.20" in box.children[-2].value
    box.controls["nonlinearity"].value = "tanh"
    assert "tanh RNN" in box.children[-2].value
