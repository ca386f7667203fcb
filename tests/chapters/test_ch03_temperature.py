"""Chapter 03's entropy and temperature functions agree with independent computations (PyTorch's
built-ins, autograd, closed forms), and the widget's plain functions show the right numbers."""

import math

import matplotlib
import pytest
import torch
from torch.testing import assert_close

matplotlib.use("Agg")

from attncourse.chapters.ch03_entropy_and_temperature import (  # noqa: E402
    PATTERNS,
    T_GRID,
    EntropyPlot,
    cosine_temperature,
    dot_product_statistics,
    entropy_caption,
    entropy_curve,
    entropy_of_scores,
    entropy_state,
    entropy_temperature_derivative,
    entropy_widget,
    entropy_widget_update,
    gibbs_objective,
    hoeffding_entropy_bound,
    jacobian_frobenius,
    jacobian_spectral,
    kl_to_uniform,
    log_partition,
    score_range,
    score_range_from_weights,
    softmax_jacobian,
    source_cosine_schedule,
    widget_scores,
    zero_temperature_entropy,
)

f64 = torch.float64


def builtin_entropy(s, T=1.0):
    return -(torch.softmax(s / T, -1) * torch.log_softmax(s / T, -1)).sum(-1)


# ------------------------------------------------------------------------------ the Jacobian


def test_softmax_jacobian_is_autograd_s_jacobian_of_the_builtin_softmax():
    s = torch.randn(7, dtype=f64)
    auto = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), s)
    assert_close(softmax_jacobian(torch.softmax(s, -1)), auto)
    batch = torch.softmax(torch.randn(2, 3, 5, dtype=f64), -1)
    J = softmax_jacobian(batch)
    assert J.shape == (2, 3, 5, 5)
    assert_close(J[1, 2], torch.diag(batch[1, 2]) - torch.outer(batch[1, 2], batch[1, 2]))


def test_jacobian_norms_match_matrix_norms_and_their_closed_forms():
    w = torch.distributions.Dirichlet(torch.full((6,), 0.5, dtype=f64)).sample((200,))
    J = softmax_jacobian(w)
    assert_close(jacobian_frobenius(w), torch.linalg.matrix_norm(J, "fro"))
    assert_close(jacobian_spectral(w), torch.linalg.matrix_norm(J, 2))
    assert float(jacobian_spectral(w).max()) <= 0.5 + 1e-12
    assert float(jacobian_spectral(torch.tensor([0.5, 0.5, 0.0], dtype=f64))) == pytest.approx(0.5)
    uniform = torch.full((10,), 0.1, dtype=f64)
    assert float(jacobian_spectral(uniform)) == pytest.approx(0.1)
    assert float(jacobian_frobenius(uniform)) == pytest.approx(math.sqrt(9) / 10)
    assert float(jacobian_frobenius(torch.eye(4, dtype=f64)[2])) == 0.0


def test_the_spectral_norm_reaches_one_half_only_at_two_halves():
    """‖diag(α) − ααᵀ‖₂ ≤ ½ with equality only at α = (½, ½, 0, …): near it, and at the softmax of
    a two-way tie at any finite temperature, it stays below ½; it tends to ½ as T → 0."""
    assert float(jacobian_spectral(torch.tensor([0.0, 0.5, 0.0, 0.5], dtype=f64))) == 0.5
    for near in ([0.5, 0.499, 0.001, 0.0], [0.45, 0.45, 0.1, 0.0], [0.5, 0.25, 0.25, 0.0]):
        assert float(jacobian_spectral(torch.tensor(near, dtype=f64))) < 0.5 - 1e-4, near
    tie = torch.tensor([1.0, 1.0, 0.0, -0.5], dtype=f64)
    gaps = [0.5 - float(jacobian_spectral(torch.softmax(tie / T, -1))) for T in (2.0, 1.0, 0.3)]
    assert all(g > 0 for g in gaps) and gaps[0] > gaps[1] > gaps[2]
    w = torch.distributions.Dirichlet(torch.full((5,), 0.3, dtype=f64)).sample((20000,))
    assert float(jacobian_spectral(w).max()) < 0.5
    n = 64  # uniform: ‖J‖₂ = 1/n but ‖J‖_F = √(n − 1)/n
    uniform = torch.full((n,), 1 / n, dtype=f64)
    assert float(jacobian_frobenius(uniform)) == pytest.approx(math.sqrt(n - 1) / n, rel=1e-12)
    assert float(jacobian_spectral(uniform)) == pytest.approx(1 / n, rel=1e-9)


# ----------------------------------------------------------------------- entropy and temperature


@pytest.mark.parametrize("T", [0.05, 0.3, 1.0, 4.0, 50.0])
def test_entropy_of_scores_equals_the_definition(T):
    s = torch.randn(4, 9, dtype=f64) * 2
    assert_close(entropy_of_scores(s, T), builtin_entropy(s, T))


def test_entropy_at_tiny_temperature_is_log_of_the_number_of_tied_maxima():
    s = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, -1.0], [0.0, 5.0, 1.0, 1.0]], dtype=f64)
    h = entropy_of_scores(s, 1e-5)
    assert torch.isfinite(h).all()
    assert_close(h, torch.log(torch.tensor([2.0, 3.0, 1.0], dtype=f64)))
    assert_close(zero_temperature_entropy(s), h)


def test_entropy_curve_rises_from_the_zero_temperature_limit_to_log_n():
    s = torch.tensor([0.3, -1.0, 2.0, 2.0, 0.5], dtype=f64)
    temps = torch.logspace(-3, 3, 300, dtype=f64)
    H = entropy_curve(s, temps)
    assert H.shape == (300,)
    assert (H.diff() >= 0).all()
    assert float(H[0]) == pytest.approx(math.log(2), abs=1e-9) and float(H[-1]) == pytest.approx(
        math.log(5), abs=1e-5
    )
    assert_close(H[123], entropy_of_scores(s, float(temps[123])))
    batch = entropy_curve(torch.randn(3, 4, dtype=f64), [0.5, 2.0])
    assert batch.shape == (3, 2) and (batch[:, 1] > batch[:, 0]).all()


@pytest.mark.parametrize("T", [0.2, 0.7, 3.0])
def test_dH_dT_is_the_score_variance_over_T_cubed(T):
    s = torch.randn(6, dtype=f64)
    t = torch.tensor(T, dtype=f64, requires_grad=True)
    (grad,) = torch.autograd.grad(builtin_entropy(s, t), t)
    assert float(entropy_temperature_derivative(s, T)) == pytest.approx(float(grad), rel=1e-10)
    assert float(entropy_temperature_derivative(torch.full((4,), 1.5, dtype=f64), T)) == 0.0


# -------------------------------------------------------------------------- the entropy bound


def test_hoeffding_lower_bound_holds_and_the_printed_upper_bound_fails():
    s = torch.randn(5000, 12, dtype=f64) * torch.rand(5000, 1, dtype=f64) * 4
    bound = hoeffding_entropy_bound(s)
    h = builtin_entropy(s)
    assert_close(bound, math.log(12) - (s.max(-1).values - s.min(-1).values) ** 2 / 8)
    assert (h >= bound - 1e-12).all()  # the corrected Thm. 14.3.5
    assert (h > bound + 1e-9).float().mean() > 0.99  # the printed 'H <= bound' fails almost always
    two = torch.tensor([0.0, 3.0], dtype=f64)
    assert (
        float(builtin_entropy(two)) > 0 > float(hoeffding_entropy_bound(two))
    )  # the counterexample


def test_the_bound_is_tight_for_two_balanced_points_as_the_range_shrinks():
    for delta, lo in ((0.1, 0.998), (0.01, 0.99998)):
        s = torch.tensor([-delta / 2, delta / 2], dtype=f64)
        ratio = float(kl_to_uniform(torch.softmax(s, -1))) / (delta**2 / 8)
        assert lo < ratio < 1


def test_score_range_can_be_read_back_from_the_weights():
    s = torch.randn(3, 7, dtype=f64)
    assert_close(score_range_from_weights(torch.softmax(s, -1)), score_range(s))
    assert_close(score_range(s), s.max(-1).values - s.min(-1).values)


def test_kl_to_uniform_is_log_n_minus_entropy():
    w = torch.softmax(torch.randn(4, 5, dtype=f64), -1)
    assert_close(kl_to_uniform(w), (w * torch.log(w * 5)).sum(-1))


# ------------------------------------------------------------------------------- Gibbs (14.3.16)


@pytest.mark.parametrize("T", [0.25, 1.0, 3.0])
def test_softmax_maximises_the_gibbs_objective_with_a_kl_gap(T):
    s = torch.randn(5, dtype=f64)
    assert float(log_partition(s, T)) == pytest.approx(float(T * torch.logsumexp(s / T, -1)))
    best = gibbs_objective(torch.softmax(s / T, -1), s, T)
    assert float(best) == pytest.approx(float(log_partition(s, T)))
    others = torch.distributions.Dirichlet(torch.ones(5, dtype=f64)).sample((2000,))
    gap = log_partition(s, T) - gibbs_objective(others, s, T)
    kl = (others * (torch.log(others) - torch.log_softmax(s / T, -1))).sum(-1)
    assert_close(gap, T * kl)
    assert (gap > 0).all()


# ----------------------------------------------------------------------- schedules (App. 14.3.2)


def test_cosine_temperature_runs_from_t0_to_tmin_symmetrically():
    steps = torch.arange(0, 41, dtype=f64)
    T = cosine_temperature(steps, 40, 4.0, 0.5)
    assert float(T[0]) == pytest.approx(4.0) and float(T[-1]) == pytest.approx(0.5)
    assert float(T[20]) == pytest.approx(2.25) and (T.diff() < 0).all()
    assert_close(T + T.flip(0), torch.full_like(T, 4.5))
    assert cosine_temperature(10, 40, 4.0, 0.5) == pytest.approx(
        0.5 + 3.5 * (1 + math.cos(math.pi / 4)) / 2
    )
    assert (
        cosine_temperature(-5, 40, 4.0, 0.5) == 4.0 and cosine_temperature(99, 40, 4.0, 0.5) == 0.5
    )  # clamped
    with pytest.raises(ValueError, match="total_steps"):
        cosine_temperature(1, 0, 4.0, 0.5)


def test_the_source_pseudocode_never_uses_t0():
    printed = source_cosine_schedule(3.0, 0.1, 50)
    assert len(printed) == 50 and printed[-1] == pytest.approx(0.1)
    assert printed[0] < 3.0 - 1e-3
    assert printed[0] == pytest.approx(cosine_temperature(1, 50, 3.0, 0.1))


# ------------------------------------------------------------- q·k statistics (Vaswani, fn. 4)


def test_dot_product_statistics_show_variance_d_k_and_saturation_without_scaling():
    g = torch.Generator().manual_seed(7)
    small, large = dot_product_statistics(8, generator=g), dot_product_statistics(1024, generator=g)
    for r in (small, large):
        assert 0.9 < r["var_ratio"] < 1.1
        assert r["scaled"]["entropy"] > 3.0 and r["scaled"]["max_weight"] < 0.2
    assert large["unscaled"]["max_weight"] > 0.85 and large["unscaled"]["entropy"] < 0.5
    assert large["unscaled"]["jacobian"] < large["scaled"]["jacobian"]


# --------------------------------------------------------------------------------- the widget


def test_widget_scores_are_q_dot_k_with_the_chosen_pattern_and_nested_draws():
    s = widget_scores(PATTERNS[0], 64, 10, scaled=False, seed=3)
    assert_close(widget_scores(PATTERNS[0], 64, 10, scaled=True, seed=3), s / 8)
    assert_close(
        widget_scores(PATTERNS[0], 64, 6, scaled=False, seed=3), s[:6]
    )  # n = 6: the first 6 keys
    one = widget_scores(PATTERNS[1], 256, 5, scaled=False)
    tie = widget_scores(PATTERNS[2], 256, 5, scaled=False)
    assert int(one.argmax()) == 0 and float(one[0]) > 150  # ‖q‖² ≈ d_k
    assert float(tie[0]) == float(tie[1]) == float(one[0])
    with pytest.raises(ValueError, match="pattern"):
        widget_scores("nonsense", 4, 4)
    with pytest.raises(ValueError, match="n"):
        widget_scores(PATTERNS[0], 4, 1)


@pytest.mark.parametrize(
    "pattern, T, d_k, n, scaled",
    [
        (PATTERNS[0], 1.0, 16, 16, True),
        (PATTERNS[1], 0.05, 256, 8, False),
        (PATTERNS[2], 30.0, 2, 128, True),
    ],
)
def test_entropy_state_shows_the_weights_entropy_bound_and_curves(pattern, T, d_k, n, scaled):
    st = entropy_state(pattern, T, d_k, n, scaled, seed=1)
    s = widget_scores(pattern, d_k, n, scaled, seed=1)
    assert_close(st.scores, s)
    assert_close(st.weights, torch.softmax(s / T, -1))
    assert st.entropy == pytest.approx(float(builtin_entropy(s, T)), abs=1e-10)
    assert st.max_entropy == pytest.approx(math.log(n))
    assert st.lower_bound == pytest.approx(math.log(n) - float(s.max() - s.min()) ** 2 / (8 * T**2))
    assert st.entropy >= st.lower_bound
    assert st.jacobian_frobenius == pytest.approx(
        float(torch.linalg.matrix_norm(softmax_jacobian(st.weights)))
    )
    assert_close(st.entropy_curve, builtin_entropy(s[None] / T_GRID[:, None]))
    assert (st.entropy_curve.diff() >= -1e-12).all()
    assert (st.entropy_curve >= st.bound_curve - 1e-12).all() and (st.bound_curve >= 0).all()


def test_entropy_state_of_a_tie_at_low_temperature_is_log_2_and_half_a_jacobian():
    st = entropy_state(PATTERNS[2], 0.01, 64, 16)
    assert st.entropy == pytest.approx(math.log(2), abs=1e-9)
    assert st.jacobian_frobenius == pytest.approx(0.5, abs=1e-9)
    assert f"VIOLATED by {st.entropy - st.printed_bound:.2g}" in entropy_caption(st)
    near_equal = entropy_state(
        PATTERNS[0], 1e6, 1, 4
    )  # violated, but only by ~(Δs/T)²/8 - KL ≈ 1e-12
    assert 0 < near_equal.entropy - near_equal.printed_bound < 1e-10
    with pytest.raises(ValueError, match="temperature"):
        entropy_state(temperature=0.0)


def test_widget_update_redraws_and_blitting_leaves_no_stale_pixels():
    plot = EntropyPlot()
    state, png, text = entropy_widget_update(plot, PATTERNS[0], 1.0, 16, 16)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and text == entropy_caption(state)
    state2, png2, _ = entropy_widget_update(plot, PATTERNS[2], 0.1, 256, 64, False, 4)
    assert png2 != png and state2.entropy != state.entropy
    assert entropy_widget_update(EntropyPlot(), PATTERNS[2], 0.1, 256, 64, False, 4)[1] == png2


def test_widget_controls_drive_the_image_and_readout():
    box = entropy_widget()
    image, readout = box.children[-1], box.children[-2]
    before = image.value
    box.controls["pattern"].value = PATTERNS[2]
    box.controls["temperature"].value = 0.01
    assert image.value != before and "H = 0.693" in readout.value
