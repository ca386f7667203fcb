"""Chapter 02's encoder-decoder models, tasks, training, decoding, alignments and information
tools.
"""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import attncourse.chapters.ch02_seq2seq_bottleneck as s2s
from attncourse.chapters.ch02_seq2seq_bottleneck import (
    length_schedule,
    make_batch,
    make_target,
    source_bits,
    source_position,
    target_length,
    true_alignment,
)

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"num_tokens": 7, "emb_dim": 5, "enc_hidden": 4}


def batch(task="copy", B=3, n=6, V=7, seed=0):
    return make_batch(task, B, n, V, torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------------------ data


def test_tasks_copy_and_reverse():
    src, tgt = batch("copy")
    assert src.dtype == torch.long and src.shape == (3, 6) and torch.equal(src, tgt)
    src, tgt = batch("reverse")
    assert torch.equal(tgt, src.flip(1)) and int(src.max()) < 7 and int(src.min()) >= 0
    assert torch.equal(true_alignment("copy", 4), torch.eye(4))
    assert torch.equal(true_alignment("reverse", 4), torch.eye(4).flip(1))
    assert [source_position("reverse", t, 5) for t in range(5)] == [4, 3, 2, 1, 0]
    assert source_bits(30, 20) == pytest.approx(30 * math.log2(20))
    lengths = length_schedule(200, 5, 9, torch.Generator().manual_seed(0))
    assert min(lengths) == 5 and max(lengths) == 9


def test_tasks_duplicate_and_merge_are_one_to_many_and_many_to_one():
    src = torch.tensor([[1, 2, 3, 4, 5], [6, 0, 6, 1, 2]])
    assert make_target("duplicate", src).tolist() == [
        [1, 1, 2, 2, 3, 3, 4, 4, 5, 5],
        [6, 6, 0, 0, 6, 6, 1, 1, 2, 2],
    ]
    assert make_target("merge", src, 7).tolist() == [[3, 0, 5], [6, 0, 2]]  # (x0 + x1) mod 7 ...
    assert make_target("merge", src[:, :4], 7).tolist() == [[3, 0], [6, 0]]  # even length
    assert [target_length(t, 5) for t in ("copy", "reverse", "duplicate", "merge")] == [5, 5, 10, 3]
    dup = true_alignment("duplicate", 3)
    assert dup.shape == (6, 3) and dup.sum(0).tolist() == [2.0, 2.0, 2.0]  # two rows per column
    merge = true_alignment("merge", 5)
    assert merge.tolist() == [[1, 1, 0, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 0, 1]]
    assert [source_position("duplicate", t, 3) for t in range(6)] == [0, 0, 1, 1, 2, 2]
    x, y = make_batch("merge", 4, 9, 11, torch.Generator().manual_seed(2))
    assert x.shape == (4, 9) and y.shape == (4, 5) and int(y.max()) < 11
    assert torch.equal(y[:, -1], x[:, -1])  # a lone last token is kept


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: make_batch("sort", 2, 3), "task must be one of"),
        (lambda: make_batch("copy", 2, 0), "length must be a positive int"),
        (lambda: make_batch("copy", 0, 3), "batch_size"),
        (lambda: make_batch("copy", 2, 3, num_tokens=1), "num_tokens"),
        (lambda: make_target("copy", torch.zeros(3, dtype=torch.long)), "(B, n)"),
        (lambda: make_target("merge", torch.zeros(2, 3, dtype=torch.long)), "num_tokens"),
        (lambda: length_schedule(3, 5, 4), "max_length"),
        (lambda: source_position("copy", 5, 5), "t must be in"),
        (lambda: source_position("duplicate", 6, 3), "t must be in"),
        (lambda: source_position("merge", 0, 4), "two source positions"),
    ],
)
def test_data_bad_inputs_raise_clear_errors(call, fragment):
    with pytest.raises(ValueError, match=None) as info:
        call()
    assert fragment in str(info.value)


# ------------------------------------------------------------------------------ models


@pytest.mark.parametrize("kind", s2s.ATTENTION_KINDS)
def test_forward_shapes_and_weights_are_distributions(kind):
    model = s2s.chapter_model(kind, seed=1, **SMALL)
    src, tgt = batch(n=6)
    logits, weights = model(src, tgt)
    assert logits.shape == (3, 6, 7)
    if kind == "none":
        assert weights is None
        return
    assert weights.shape == (3, 6, 6)
    assert torch.allclose(weights.sum(-1), torch.ones(3, 6)) and (weights >= 0).all()
    if kind == "local-m":  # nothing outside |j - t| <= D
        t, j = torch.arange(6)[:, None], torch.arange(6)[None, :]
        assert (weights[:, (j - t).abs() > model.window] == 0).all()
        assert (weights[:, (j - t).abs() <= model.window] > 0).all()


def test_additive_step_is_bahdanau_formula_by_hand():
    model = s2s.chapter_model("additive", seed=2, **SMALL).double()
    src, tgt = batch(n=5)
    H, C, s0 = model.encode(src)
    _, weights = model(src, tgt)
    att = model.attention
    W, U, v = att.W_a.weight, att.U_a.weight, att.v_a.weight[0]
    for b in range(3):  # step 1 reads s_0: e_j = v^T tanh(W s_0 + U h_j), alpha = softmax_j e
        e = torch.stack([v @ torch.tanh(W @ s0[b] + U @ H[b, j]) for j in range(5)])
        alpha = torch.exp(e - e.max()) / torch.exp(e - e.max()).sum()
        assert torch.allclose(weights[b, 0], alpha)


@pytest.mark.parametrize("kind", ["dot", "general", "concat"])
def test_luong_scores_use_the_current_state_by_hand(kind):
    model = s2s.chapter_model(kind, seed=3, **SMALL).double()
    src, tgt = batch(n=5)
    H, _, s0 = model.encode(src)
    states, _ = model.decoder(
        model.tgt_embed(model.decoder_inputs(tgt)), s0[None]
    )  # (B, T, H_d) s_1..s_T
    _, weights = model(src, tgt)
    att = model.attention
    score = {
        "dot": lambda s, h: s @ h,
        "general": lambda s, h: s @ att.W_a.weight @ h,
        "concat": lambda s, h: att.v_a.weight[0] @ torch.tanh(att.W_a.weight @ torch.cat([s, h])),
    }[kind]
    for b in range(3):
        for t in (0, 2, 4):
            e = torch.stack([score(states[b, t], H[b, j]) for j in range(5)])
            alpha = torch.exp(e - e.max()) / torch.exp(e - e.max()).sum()
            assert torch.allclose(weights[b, t], alpha)


def test_fixed_context_model_reads_the_source_only_through_C():
    src, _ = batch(n=6)
    for kind, ignores_H in (("none", True), ("additive", False), ("general", False)):
        model = s2s.chapter_model(kind, seed=4, **SMALL)
        with torch.no_grad():
            H, C, s0 = model.encode(src)
            y = torch.full((3,), model.bos)
            logits, _, _ = model.step(y, s0, H, C, 0)
            other, _, _ = model.step(y, s0, torch.randn_like(H), C, 0)  # same C, different h_1..h_n
        assert torch.equal(logits, other) == ignores_H, kind


@pytest.mark.parametrize("kind", s2s.ATTENTION_KINDS)
def test_greedy_decoding_equals_teacher_forced_argmax_on_its_own_output(kind):
    model = s2s.chapter_model(kind, seed=5, **SMALL)
    src, _ = batch(n=7, seed=3)
    tokens, weights = s2s.greedy_decode(model, src)
    with torch.no_grad():
        logits, forced = model(src, tokens)  # teacher forcing with the decoded tokens
    assert torch.equal(logits.argmax(-1), tokens)
    if kind != "none":
        assert torch.allclose(weights, forced, atol=1e-6)


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: s2s.Seq2Seq("bahdanau"), "attention must be one of"),
        (lambda: s2s.Seq2Seq("dot", enc_hidden=4, dec_hidden=5), "dot score needs"),
        (lambda: s2s.Seq2Seq("none", num_tokens=1), "num_tokens"),
        (lambda: s2s.Seq2Seq("local-m", window=-1), "window"),
        (
            lambda: s2s.chapter_model("none", **SMALL)(
                torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.long)
            ),
            "torch.long",
        ),
        (
            lambda: s2s.chapter_model("none", **SMALL)(
                torch.full((2, 3), 7), torch.zeros(2, 3, dtype=torch.long)
            ),
            "outside 0..6",
        ),
        (
            lambda: s2s.chapter_model("none", **SMALL)(
                torch.zeros(2, 3, dtype=torch.long), torch.zeros(3, 3, dtype=torch.long)
            ),
            "same batch size",
        ),
        (
            lambda: s2s.chapter_model("none", **SMALL)(
                torch.zeros(3, dtype=torch.long), torch.zeros(3, dtype=torch.long)
            ),
            "(B, n)",
        ),
        (
            lambda: s2s.alignment_matrices(
                s2s.chapter_model("none", **SMALL), torch.zeros(1, 3, dtype=torch.long)
            ),
            "no attention weights",
        ),
        (
            lambda: s2s.train_seq2seq(s2s.chapter_model("none", **SMALL), "sort", steps=1),
            "task must be",
        ),
        (lambda: s2s.train_seq2seq(s2s.chapter_model("none", **SMALL), steps=0), "steps"),
        (lambda: s2s.diagonal_fraction(torch.ones(3, 4)), "(..., n, n)"),
        (lambda: s2s.diagonal_fraction(torch.ones(3, 3), "duplicate"), "(..., 2n, n)"),
        (lambda: s2s.diagonal_fraction(torch.ones(2, 3), "merge"), "alignment_mass"),
        (lambda: s2s.alignment_mass(torch.ones(3, 3), "merge"), "need 2 rows"),
        (
            lambda: s2s.decoding_traces(
                {"none": s2s.chapter_model("none", **SMALL)},
                "duplicate",
                torch.zeros(1, 3, dtype=torch.long),
            ),
            "square tasks",
        ),
        (lambda: s2s.entropy_bits([0.5, 0.6]), "sum to 1"),
        (lambda: s2s.mutual_information_bits([0.5, 0.5]), "2-D"),
        (lambda: s2s.fano_information_bound(1.5, 4), "error_rate"),
        (lambda: s2s.train_chapter_models(["transformer"]), "unknown chapter models"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, fragment):
    with pytest.raises(ValueError) as info:
        call()
    assert fragment in str(info.value)


# ------------------------------------------------------------------------------ training


def test_training_learns_copy_with_attention_and_shows_progress(capsys):
    model = s2s.chapter_model("general", seed=0, **s2s.CHAPTER_SIZES)
    result = s2s.train_seq2seq(
        model,
        "copy",
        steps=150,
        lr=2e-2,
        final_lr_fraction=0.1,
        min_length=4,
        max_length=8,
        progress=True,
        desc="quick",
    )
    assert len(result.losses) == 150 and sum(result.losses[-10:]) < 0.2 * sum(result.losses[:10])
    accuracy = s2s.accuracy_by_length(model, "copy", [4, 5], samples=100)
    assert float(accuracy.min()) >= 0.9, accuracy
    assert "quick" in capsys.readouterr().err  # the tqdm bar


@pytest.mark.parametrize("task", ["duplicate", "merge"])
def test_models_train_and_decode_tasks_whose_target_length_differs(task):
    model = s2s.chapter_model("general", seed=0, **SMALL)
    s2s.train_seq2seq(model, task, steps=2, min_length=3, max_length=5, progress=False)
    src, tgt = make_batch(task, 2, 5, 7, torch.Generator().manual_seed(0))
    logits, weights = model(src, tgt)
    assert logits.shape == (2, target_length(task, 5), 7) and weights.shape[1:] == (tgt.shape[1], 5)
    tokens, greedy_weights = s2s.greedy_decode(model, src, steps=tgt.shape[1])
    assert tokens.shape == tgt.shape and greedy_weights.shape == weights.shape
    assert s2s.accuracy_by_length(model, task, [4, 5], samples=3).shape == (2,)
    mass = s2s.alignment_mass(greedy_weights, task)
    assert mass.shape == tgt.shape and bool(((mass >= 0) & (mass <= 1 + 1e-6)).all())


def test_pair_sensitivity_counts_output_changes_per_member_of_the_pair():
    model = s2s.chapter_model("general", seed=0, **SMALL)
    src, _ = make_batch("merge", 3, 6, 7, torch.Generator().manual_seed(1))
    sensitivity = s2s.pair_sensitivity(model, src, shift=3)
    assert sensitivity.shape == (2,) and bool(((sensitivity >= 0) & (sensitivity <= 1)).all())
    with pytest.raises(ValueError, match="one pair"):
        s2s.pair_sensitivity(model, src[:, :1])
    with pytest.raises(ValueError, match="multiple of V"):
        s2s.pair_sensitivity(model, src, shift=7)


def test_alignment_mass_and_duplicate_peaks_on_exact_alignments():
    dup = s2s.true_alignment("duplicate", 4)  # (8, 4), one-hot rows
    assert s2s.diagonal_fraction(dup, "duplicate", band=0) == 1.0
    assert s2s.peak_offsets(dup, "duplicate").tolist() == [0] * 8
    assert torch.allclose(s2s.alignment_mass(dup, "duplicate"), torch.ones(8))
    split = s2s.true_alignment("merge", 4) / 2  # (2, 4): half the weight on each of the pair
    assert torch.allclose(s2s.alignment_mass(split, "merge"), torch.ones(2))
    assert torch.allclose(
        s2s.alignment_mass(torch.full((2, 4), 0.25), "merge"), torch.full((2,), 0.5)
    )


@pytest.mark.parametrize("kind", s2s.ATTENTION_KINDS)
def test_decoding_flops_is_what_torch_flop_counter_counts(kind):
    from torch.utils.flop_counter import FlopCounterMode

    sizes = [s2s.CHAPTER_SIZES, {**SMALL, "dec_hidden": 6, "attn_hidden": 3}]
    for model_sizes in sizes[:1] if kind == "dot" else sizes:
        model = s2s.chapter_model(kind, **model_sizes)
        for n, task in ((1, "copy"), (6, "reverse"), (5, "duplicate"), (7, "merge")):
            source = torch.zeros(1, n, dtype=torch.long)
            with torch.no_grad(), FlopCounterMode(display=False) as counter:
                s2s.greedy_decode(model, source, steps=target_length(task, n))
            assert s2s.decoding_flops(model, n, task) == counter.get_total_flops(), (kind, n)


def test_parameter_count_and_decoding_flops_follow_the_sizes():
    none = s2s.chapter_model("none", **s2s.CHAPTER_SIZES)
    wide = s2s.chapter_model("none", **s2s.chapter_sizes("none, wide"))
    dot = s2s.chapter_model("dot", **s2s.CHAPTER_SIZES)
    assert s2s.parameter_count(none) == sum(p.numel() for p in none.parameters())
    assert s2s.parameter_count(wide) > 3 * s2s.parameter_count(none)
    # without attention every step costs the same: the count grows linearly with n
    f10, f20 = s2s.decoding_flops(none, 10), s2s.decoding_flops(none, 20)
    assert f20 - f10 == 10 * (f10 - s2s.decoding_flops(none, 9))
    assert s2s.decoding_flops(dot, 30) < s2s.decoding_flops(wide, 30)
    assert s2s.decoding_flops(dot, 20, "duplicate") > s2s.decoding_flops(dot, 20)  # 40 steps
    with torch.random.fork_rng(devices=[]):
        other = s2s.Seq2Seq(**none.config)
    assert s2s.decoding_flops(other, 12) == s2s.decoding_flops(none, 12)  # weights do not matter


def test_training_is_deterministic_and_the_chapter_path_round_trips(tmp_path):
    a = s2s.train_chapter_models(["local-m"], progress=False, steps=3, max_length=6)["local-m"][0]
    b = s2s.train_chapter_models(["local-m"], progress=False, steps=3, max_length=6)["local-m"][0]
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))
    path = tmp_path / "w.pt"
    s2s.save_chapter_models({"local-m": a}, path, {"note": "test"})
    loaded = s2s.load_chapter_models(path)["local-m"]
    assert loaded.kind == "local-m" and s2s.load_chapter_info(path) == {"note": "test"}
    assert loaded.config == a.config
    for (k, p), q in zip(a.state_dict().items(), loaded.state_dict().values()):
        assert torch.equal(p.half().float(), q), k  # stored in float16
    with pytest.raises(ValueError, match="has no model"):
        s2s.load_chapter_models(path, ["none"])
    with pytest.raises(FileNotFoundError, match="train_ch02.py"):
        s2s.load_chapter_models(tmp_path / "missing.pt")


def test_the_training_script_writes_loadable_weights(tmp_path):
    out = tmp_path / "ch02.pt"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "train_ch02.py"),
            "--steps",
            "2",
            "--only",
            "none",
            "--out",
            str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout and list(s2s.load_chapter_models(out)) == ["none"]
    assert s2s.load_chapter_info(out)["training"]["steps"] == 2


# ------------------------------------------------------------------------------ shipped weights


@pytest.fixture(scope="module")
def shipped():
    return s2s.load_chapter_models()


def test_shipped_weights_are_small_and_complete(shipped):
    assert s2s.WEIGHTS_PATH.stat().st_size < 600_000
    assert list(shipped) == list(s2s.CHAPTER_MODELS)
    for name, model in shipped.items():
        kind = s2s.CHAPTER_MODELS[name][0]
        assert model.config == s2s.chapter_model(kind, **s2s.chapter_sizes(name)).config, name


def test_shipped_models_reproduce_the_bottleneck(shipped):
    acc = {
        name: s2s.accuracy_by_length(shipped[name], "copy", [5, 30], samples=60)
        for name in ("none", "additive", "general")
    }
    assert float(acc["none"][0] - acc["none"][1]) >= 0.4  # no attention decays with length
    assert float(acc["none"][1]) <= 0.4
    for name in ("additive", "general"):
        assert float(acc[name][1]) >= 0.8 and float(acc[name][1] - acc["none"][1]) >= 0.4, name


def test_shipped_wide_fixed_context_still_collapses_where_cheaper_attention_does_not(shipped):
    acc = {
        name: float(s2s.accuracy_by_length(shipped[name], "copy", [30], samples=60)[0])
        for name in ("none", "none, wide", "none, wide, seed 1", "dot")
    }
    for name in ("none, wide", "none, wide, seed 1"):
        assert acc[name] <= 0.4 and acc["dot"] - acc[name] >= 0.4, (name, acc)
    assert s2s.parameter_count(shipped["dot"]) < s2s.parameter_count(shipped["none, wide"])


@pytest.mark.parametrize("seed_name", ["", ", seed 1"])
def test_shipped_one_to_many_and_many_to_one_alignments(shipped, seed_name):
    src, _ = make_batch("copy", 20, 10, 20, torch.Generator().manual_seed(10))
    dup = s2s.alignment_matrices(shipped["general, duplicate" + seed_name], src, steps=20)
    assert s2s.diagonal_fraction(dup, "duplicate", band=0) >= 0.85
    merge_model = shipped["general, merge" + seed_name]
    merge = s2s.alignment_matrices(merge_model, src, steps=5)
    assert float(s2s.alignment_mass(merge, "merge").mean()) >= 0.9
    # one state per row (it holds both tokens), yet the output depends on both tokens
    assert float(merge.amax(-1).mean()) >= 0.85
    assert float(s2s.pair_sensitivity(merge_model, src).min()) >= 0.9


def test_shipped_alignments_are_diagonal_and_local_m_needs_monotonic_order(shipped):
    src, _ = make_batch("copy", 20, 20, 20, torch.Generator().manual_seed(9))
    assert s2s.diagonal_fraction(s2s.alignment_matrices(shipped["additive"], src), "copy") >= 0.85
    rev = s2s.alignment_matrices(shipped["general, reverse"], src)
    assert s2s.diagonal_fraction(rev, "reverse") >= 0.85
    copy = s2s.accuracy_by_length(shipped["local-m"], "copy", [30], samples=50)
    reverse = s2s.accuracy_by_length(shipped["local-m, reverse"], "reverse", [30], samples=50)
    assert float(copy[0]) >= 0.8 and float(reverse[0]) <= 0.4


# ------------------------------------------------------------------------------ alignment metrics


def test_diagonal_fraction_and_peak_offsets():
    eye = torch.eye(6)
    assert (
        s2s.diagonal_fraction(eye, "copy") == 1.0
        and s2s.diagonal_fraction(eye.flip(1), "reverse") == 1.0
    )
    shifted = torch.roll(eye, 1, dims=1)  # peak at j = t + 1 (wrapping at the end)
    assert s2s.diagonal_fraction(shifted, "copy", band=1) == pytest.approx(5 / 6)
    assert s2s.diagonal_fraction(shifted, "copy", band=0) == 0.0
    assert s2s.peak_offsets(shifted).tolist() == [1, 1, 1, 1, 1, -5]


# ------------------------------------------------------------------------------ information


def test_information_tools_match_closed_forms():
    assert s2s.entropy_bits(torch.full((8,), 1 / 8)) == pytest.approx(3.0)
    assert s2s.mutual_information_bits(torch.eye(4) / 4) == pytest.approx(2.0)
    assert s2s.mutual_information_bits(
        torch.outer(
            torch.tensor([0.2, 0.8], dtype=torch.float64),
            torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64),
        )
    ) == pytest.approx(0.0, abs=1e-12)
    joint = s2s.joint_table([0, 1, 2, 3], [0, 1, 0, 1], 4, 2)  # Y = X mod 2
    assert s2s.mutual_information_bits(joint) == pytest.approx(1.0)
    assert s2s.binary_entropy_bits(0.5) == 1.0 and s2s.binary_entropy_bits(0.0) == 0.0
    assert s2s.fano_information_bound(0.0, 20) == pytest.approx(math.log2(20))
    assert s2s.fano_information_bound(0.95, 20) == pytest.approx(0.0, abs=1e-12)  # chance: 1 - 1/V
    assert s2s.transmitted_bits(torch.ones(10), 20) == pytest.approx(source_bits(10, 20))


def test_fano_bound_is_a_true_lower_bound_on_a_symmetric_channel():
    V, p = 5, 0.3  # a uniform token kept with probability 1 - p, else one of the others uniformly
    joint = torch.full((V, V), p / (V - 1) / V, dtype=torch.float64)
    joint.fill_diagonal_((1 - p) / V)
    assert s2s.mutual_information_bits(joint) == pytest.approx(
        s2s.fano_information_bound(p, V)
    )  # tight here
    noisy = (
        joint * 0.5 + torch.full((V, V), 1 / V**2, dtype=torch.float64) * 0.5
    )  # error rate 0.5 * p + 0.5 * 0.8
    error = 1 - float(noisy.diagonal().sum())
    assert s2s.mutual_information_bits(noisy) >= s2s.fano_information_bound(error, V) - 1e-12


# ------------------------------------------------------------------------------ figures


def test_show_alignments_draws_each_matrix_and_the_true_alignment():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    eye, anti = torch.eye(5), torch.eye(5).flip(1)
    fig = s2s.show_alignments(
        {"copy": eye, "reverse": anti, "none marked": 0.2 * torch.ones(5, 5)},
        tasks={"copy": "copy", "reverse": "reverse"},
        title="t",
    )
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["copy", "reverse", "none marked"]
    assert np.allclose(axes[0].images[0].get_array(), eye.numpy())
    assert np.allclose(axes[1].images[0].get_array(), anti.numpy())
    assert axes[0].images[0].get_clim() == (0, 1)
    dots = axes[1].lines[0]  # where reversal must read: x = n - 1 - t at row t
    assert list(dots.get_xdata()) == [4, 3, 2, 1, 0] and list(dots.get_ydata()) == [0, 1, 2, 3, 4]
    assert not axes[2].lines  # no task given, nothing marked
    plt.close(fig)
    with pytest.raises(ValueError, match="rows do not fit"):
        s2s.show_alignments({"x": torch.eye(4)[:3]}, tasks={"x": "copy"})
    with pytest.raises(ValueError, match="one \\(T, S\\) matrix"):
        s2s.show_alignments({"x": torch.ones(2, 3, 3)})
    plt.close("all")


def test_plot_accuracy_draws_percentages_and_chance():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    acc = {"none": torch.tensor([1.0, 0.5]), "additive": torch.tensor([1.0, 0.95])}
    s2s.plot_accuracy(acc, [5, 10], num_tokens=20, ax=ax)
    lines = {line.get_label(): line for line in ax.lines}
    assert list(lines["none"].get_ydata()) == pytest.approx([100.0, 50.0])
    assert list(lines["additive"].get_xdata()) == [5, 10]
    assert lines["additive"].get_color() == s2s.STYLES["additive"][0]
    assert lines["chance (1/V)"].get_ydata()[0] == pytest.approx(5.0)
    plt.close(fig)


# ------------------------------------------------------------------------------ widget


@pytest.fixture(scope="module")
def traces():
    models = {k: s2s.chapter_model(k, seed=0, **SMALL) for k in ("none", "additive")}
    src, _ = make_batch("copy", 2, 6, 7, torch.Generator().manual_seed(1))
    return s2s.decoding_traces(models, "copy", src)


def test_widget_update_moves_the_row_and_returns_a_png(traces):
    plot = s2s.DecodingPlot(6)
    trace, png, caption = s2s.decoding_widget_update(plot, traces, "additive", 1, 2)
    assert (
        png[:8] == b"\x89PNG\r\n\x1a\n" and "step t = 2" in caption and "attention peak" in caption
    )
    assert [b.get_height() for b in plot._bars] == pytest.approx(trace.weights[2].tolist())
    shown = plot._image.get_array()
    assert (shown[3:] == 0).all() and np.allclose(shown[:3], trace.weights[:3])
    _, png2, caption2 = s2s.decoding_widget_update(plot, traces, "none", 0, 5)
    assert png2 != png and "no attention" in caption2
    with pytest.raises(ValueError, match="step t"):
        plot.update(trace, 6)


def test_widget_controls_redraw(traces):
    box = s2s.decoding_widget(traces, model="additive")
    image, readout = box.children[-1], box.children[-2]
    before = image.value
    box.controls["t"].value = 4
    assert image.value != before and "step t = 4" in readout.value
    box.controls["model"].value = "none"
    assert "no attention" in readout.value
