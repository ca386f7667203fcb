"""Chapter 09's code (Pre-LN vs Post-LN vs DeepNorm): values, not shapes."""

import math

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")  # in this process only: the notebooks' kernels keep their inline backend

from attncourse.blocks import TransformerBlock
from attncourse.chapters.ch09_pre_ln_vs_post_ln import (
    CausalLM,
    Run,
    StabilityPlot,
    copy_batch,
    deepnorm_constants,
    init_gradients,
    layer_gradient_norms,
    smooth,
    stability_widget_update,
    train_copy,
    update_data_ratio,
    warmup_schedule,
)


def test_warmup_schedule_values():
    s = warmup_schedule(6, 0.3, 3)
    assert torch.allclose(s, torch.tensor([0.1, 0.2, 0.3, 0.3, 0.3, 0.3], dtype=torch.float64))
    assert torch.equal(warmup_schedule(4, 1e-3, 0), torch.full((4,), 1e-3, dtype=torch.float64))


def test_update_data_ratio_and_deepnorm_constants():
    w = torch.randn(10, 10, dtype=torch.float64)
    assert abs(float(update_data_ratio(w, 1.1 * w)) - 0.1) < 1e-12
    a, b = deepnorm_constants(6).tolist()  # decoder-only, 6 layers: the chapter's model
    assert abs(a - 1.861) < 1e-3 and abs(b - 0.380) < 1e-3
    a, b = deepnorm_constants(8).tolist()
    assert abs(a - 2.0) < 1e-12 and abs(b - 64**-0.25) < 1e-12
    assert abs(a - TransformerBlock(8, 2, norm="deepnorm", num_layers=8).alpha) < 1e-12


def test_copy_batch_targets_are_the_copy():
    inputs, targets = copy_batch(4, 5, 7, torch.Generator().manual_seed(0))
    assert (inputs[:, 5] == 7).all()  # the separator
    assert (targets[:, :5] == -100).all()
    assert torch.equal(targets[:, 5:], inputs[:, :5])  # predict the first half again


def test_causal_lm_pre_ln_has_final_norm_and_is_causal():
    torch.manual_seed(0)
    model = CausalLM(11, 16, 2, 2, norm="pre", max_len=8)
    x = torch.randint(11, (1, 8))
    y = x.clone()
    y[0, 5:] = (y[0, 5:] + 1) % 11
    a, b = model(x), model(y)
    assert torch.allclose(a[0, :5], b[0, :5])  # future tokens do not change the past
    assert not torch.allclose(a[0, 5:], b[0, 5:])
    with pytest.raises(ValueError):
        CausalLM(11, 16, 2, 2, norm="mid")


def test_layer_gradient_norms_are_the_w2_gradients_of_init_gradients():
    """Chapter 09's exercise 2: ‖∂L/∂W^{2,l}‖_F per block, bottom first — the numbers
    init_gradients plots, for the same model and tokens, and without touching .grad."""
    for norm, n, seed in (("post", 3, 0), ("pre", 4, 1)):
        torch.manual_seed(seed)
        model = CausalLM(64, 64, 4, n, norm=norm, max_len=32).double()
        g = torch.Generator().manual_seed(1000 + seed)  # init_gradients' tokens for this seed
        tokens = torch.randint(64, (8, 33), generator=g)
        for p in model.parameters():
            p.grad = torch.ones_like(p)  # stale gradients: they must neither count nor change

        def loss_fn(m, tokens=tokens):
            return torch.nn.functional.cross_entropy(
                m(tokens[:, :-1]).flatten(0, 1), tokens[:, 1:].flatten()
            )

        norms = layer_gradient_norms(model, loss_fn)
        expected = init_gradients(norm, n, seeds=(seed,), dtype=torch.float64)["w2"]
        assert norms.dtype == torch.float64 and norms.shape == (n,)
        assert np.allclose(norms.numpy(), expected, rtol=1e-10)
        assert all(torch.equal(p.grad, torch.ones_like(p)) for p in model.parameters())
        by_hand = [
            float(torch.autograd.grad(loss_fn(model), b.ffn[2].weight)[0].norm())
            for b in model.blocks
        ]
        assert np.allclose(norms.numpy(), by_hand, rtol=1e-12)


def test_deepnorm_s_profile_at_initialisation_is_flat_on_other_seeds():
    """Chapter 09 §5 on eight other initialisations: DeepNorm's last/first W² gradient is within
    20 % of 1, where Post-LN's grows (≥ 1.1)."""
    seeds = tuple(range(8, 16))
    deep = init_gradients("deepnorm", 12, seeds=seeds, dtype=torch.float64)["w2"]
    post = init_gradients("post", 12, seeds=seeds, dtype=torch.float64)["w2"]
    assert abs(deep[-1] / deep[0] - 1) < 0.2 and post[-1] / post[0] >= 1.1


def test_one_initialisation_s_post_ln_profile_is_noisy():
    """Chapter 09 A.4: of the first eight initialisations (the notebook's average), six Post-LN
    profiles grow from the first to the last layer and two fall; their average grows."""
    ratios = []
    for seed in range(8):
        w2 = init_gradients("post", 12, seeds=(seed,), dtype=torch.float64)["w2"]
        ratios.append(w2[-1] / w2[0])
    assert sum(r > 1.05 for r in ratios) == 6 and sum(r < 0.95 for r in ratios) == 2, ratios
    mean = init_gradients("post", 12, dtype=torch.float64)["w2"]
    assert mean[-1] / mean[0] >= 1.1


def test_init_gradients_reproduce_xiong_fig3_contrast():
    """The chapter's setting (d = 64, float32 here) on eight other initialisations."""
    seeds = tuple(range(8, 16))
    post = init_gradients("post", 12, seeds=seeds)
    pre = init_gradients("pre", 12, seeds=seeds)
    assert post["w2"][-1] / post["w2"][0] > 1.1  # Post-LN: larger gradients on top layers
    assert pre["w2"][-1] / pre["w2"][0] < 0.5
    assert post["w2"][-1] > 2 * pre["w2"][-1]
    assert (
        abs(post["rms"][-1] - 1.0) < 0.05 and pre["rms"][-1] > 2 * pre["rms"][1]
    )  # Pre-LN stream grows


def test_pre_ln_s_tilt_comes_from_the_branches_not_the_final_norm():
    """Chapter 09 §2: dropping the final LayerNorm keeps the fall of the per-layer gradient,
    cutting the branch terms J_F J_LN out of the backward pass removes it (another seed pair)."""
    kw = {"dtype": torch.float64, "seeds": (2, 3)}
    tilt = {}
    for name, switch in (
        ("built", {}),
        ("no final norm", {"final_norm": False}),
        ("identity paths", {"through_branches": False}),
    ):
        w2 = init_gradients("pre", 12, **kw, **switch)["w2"]
        tilt[name] = w2[-1] / w2[0]
    assert tilt["built"] <= 0.8 and abs(tilt["no final norm"] / tilt["built"] - 1) < 0.25
    assert tilt["identity paths"] >= 0.9
    cut = init_gradients("pre", 3, through_branches=False, dtype=torch.float64)
    assert np.allclose(cut["dx"], cut["dx"][-1])  # ∂L/∂x_l = ∂L/∂x_N for every l
    full = init_gradients("pre", 3, dtype=torch.float64)
    assert np.allclose(cut["rms"], full["rms"])  # the same forward pass
    with pytest.raises(ValueError, match="norm='pre'"):
        init_gradients("post", 3, final_norm=False)


def test_the_notebook_s_learning_rate_cells_hold_on_another_seed():
    """Chapter 09 §7 on seed 1: at 6 layers without warm-up Post-LN learns at 3e-3, not at 5e-3;
    Pre-LN learns at 3e-2."""
    assert train_copy("post", 6, 3e-3, 0, seed=1).final_accuracy >= 0.9
    assert train_copy("post", 6, 5e-3, 0, seed=1).final_accuracy < 0.9
    assert train_copy("pre", 6, 3e-2, 0, seed=1).final_accuracy >= 0.9


def test_the_notebook_s_headline_holds_on_another_seed():
    """Chapter 09 runs seed 0; the same asserts on seed 1 (Xiong et al. 2020, Fig. 2's effect, and
    DeepNorm at the same learning rate)."""
    post = train_copy("post", 6, 1e-2, 0, seed=1)
    pre = train_copy("pre", 6, 1e-2, 0, seed=1)
    warmed = train_copy("post", 6, 1e-2, 50, seed=1)
    deep = train_copy("deepnorm", 6, 1e-2, 0, seed=1)
    assert post.final_accuracy <= 0.3 and abs(post.final_loss - math.log(16)) < 0.15  # a stall ...
    assert np.isfinite(post.loss).all()  # ... not a divergence
    assert pre.final_accuracy >= 0.95
    assert warmed.final_accuracy >= 0.8 and warmed.final_accuracy - post.final_accuracy >= 0.5
    assert deep.final_accuracy >= 0.95  # §5: DeepNorm needs no warm-up either


def test_the_first_update_data_ratio_is_adam_s_step_over_the_weights_scale():
    """Adam's first step moves every weight with a gradient by lr (m/√v = ±1 after bias correction),
    so log10 update/data at step 0 is the mean over matrices of log10(lr / std(W))."""
    lr, out = 1e-3, []
    torch.manual_seed(3)
    initial = CausalLM(
        17, 32, 4, 2, norm="pre", max_len=13
    )  # the model train_copy starts from with seed 3
    run = train_copy("pre", 2, lr, 0, seed=3, steps=4, ratio_steps=2, model_out=out)
    assert run.ratio.shape == (2, 2) and np.isfinite(run.ratio).all()
    expected = [
        np.mean([math.log10(lr / float(p.detach().std())) for p in b.parameters() if p.ndim == 2])
        for b in initial.blocks
    ]
    assert np.allclose(run.ratio[0], expected, atol=0.05), (run.ratio[0], expected)
    assert not np.allclose(
        out[0].blocks[0].ffn[0].weight.detach(), initial.blocks[0].ffn[0].weight.detach()
    )


def test_widget_update_moves_the_same_artists_and_redraws():
    steps = 30
    mk = lambda norm, acc: Run(norm, 2, 1e-2, 0, 0, np.full(steps, 1.0), np.full(steps, acc))  # noqa: E731
    runs = {("post", 2, 0.01, 0): [mk("post", 0.25)], ("pre", 2, 0.01, 0): [mk("pre", 0.75)]}
    plot = StabilityPlot(runs)
    artists = [line for pair in plot.lines.values() for line in pair]
    summary, png_all, caption = stability_widget_update(plot, "all", 2, 0.01, 0)
    assert summary == {"post": 0.25, "pre": 0.75}
    assert caption.endswith("post: 0.25, pre: 0.75") and png_all.startswith(b"\x89PNG")
    assert [
        line for pair in plot.lines.values() for line in pair
    ] == artists  # same artists, new data
    assert np.allclose(plot.lines["pre", 0][1].get_ydata(), 0.75)
    summary, png_pre, _ = stability_widget_update(plot, "pre", 2, 0.01, 0)
    assert summary == {"pre": 0.75} and not plot.lines["post", 0][0].get_visible()
    assert png_pre != png_all  # the post-LN lines are gone from the image
    assert (
        stability_widget_update(plot, "all", 2, 0.01, 0)[1] == png_all
    )  # blitting leaves nothing stale
    assert stability_widget_update(plot, "all", 6, 0.01, 0)[0] == {}  # a cell that was not trained


def test_smooth_is_a_trailing_mean():
    assert np.allclose(smooth(np.array([0.0, 2.0, 4.0, 6.0]), width=2), [0.0, 1.0, 3.0, 5.0])
