"""Chapter 09's exercise checks: correct answers in every style a learner plausibly writes pass
the visible check and the notebook's hidden seeds; each common mistake fails with a message that
names it; the chapter's own functions (which the notebook imports) and LayerNorm built-ins are
refused as answers, wherever they are imported from."""

import math

import pytest
import torch
import torch.nn.functional as F
from exercise_helpers import (
    fails,
    fails_on_seeds,
    fails_when_unfinished,
    notebook_hidden_seeds,
    passes_on_seeds,
    styles_per_check,
)
from torch import nn

import attncourse.chapters.ch09_pre_ln_vs_post_ln as chapter
import attncourse.norms
from attncourse.chapters.ch09_pre_ln_vs_post_ln import (
    deepnorm_constants,
    init_gradients,
    layer_gradient_norms,
    update_data_ratio,
    warmup_schedule,
)
from attncourse.exercises import ch09 as exercises
from attncourse.exercises.ch09 import (
    check_deepnorm_constants,
    check_layer_gradient_norms,
    check_pre_ln_block,
    check_update_data_ratio,
    check_warmup_schedule,
)

# the visible seed, the notebook's hidden ones (ch09_*_test: 21 to 25), and a few more
HIDDEN_SEEDS = (0, 21, 22, 23, 24, 25, 7, 2024)
COUNTS = {  # cases per seed
    check_pre_ln_block: 3,
    check_layer_gradient_norms: 4,
    check_warmup_schedule: 5,
    check_update_data_ratio: 4,
    check_deepnorm_constants: 5,
}
CHECKS = tuple(COUNTS)


# ---------------------------------------------------------------------------- Pre-LN block


def pre_ln_block(x, attn, ffn, norm1, norm2):
    x = x + attn(norm1(x))
    return x + ffn(norm2(x))


def pre_ln_block_loop(x, attn, ffn, norm1, norm2):
    for norm, sublayer in ((norm1, attn), (norm2, ffn)):
        x = x + sublayer(norm(x))
    return x


def pre_ln_block_named(x, attn, ffn, norm1, norm2):
    attended = torch.add(x, attn(norm1(x)))  # (B, T, d) after the attention sublayer
    update = ffn(norm2(attended))
    out = attended.clone()
    out += update  # in place on a copy, never on the input
    return out


def pre_ln_block_per_sequence(x, attn, ffn, norm1, norm2):
    outputs = []
    for sequence in x:  # (T, d) each; the sublayers take (..., T, d)
        h = sequence[None] + attn(norm1(sequence[None]))
        outputs.append((h + ffn(norm2(h)))[0])
    return torch.stack(outputs)


# ---------------------------------------------------------------- per-layer gradient norms


def gradient_norms_backward(model, loss_fn):
    model.zero_grad()
    loss_fn(model).backward()
    return torch.stack([block.ffn[2].weight.grad.norm() for block in model.blocks])


def gradient_norms_autograd(model, loss_fn):
    weights = [block.ffn[2].weight for block in model.blocks]
    grads = torch.autograd.grad(loss_fn(model), weights)
    return torch.stack([torch.linalg.matrix_norm(g) for g in grads])  # Frobenius by default


def gradient_norms_named(model, loss_fn):  # by parameter name, set to None, a loop of floats
    for p in model.parameters():
        p.grad = None
    loss_fn(model).backward()
    norms = [
        float(p.grad.pow(2).sum()) ** 0.5
        for name, p in model.named_parameters()
        if name.endswith("ffn.2.weight")
    ]
    return torch.tensor(norms, dtype=model.blocks[0].ffn[2].weight.dtype)


def gradient_norms_vector_norm(model, loss_fn):
    model.zero_grad(set_to_none=False)  # zero-filled .grad, then accumulate into it
    loss_fn(model).backward()
    return torch.stack(
        [torch.linalg.vector_norm(block.ffn[2].weight.grad.flatten()) for block in model.blocks]
    )


# ------------------------------------------------------------------------ warm-up schedule


def warmup_clamp(steps, peak_lr, warmup_steps):
    t = torch.arange(steps, dtype=torch.float64)
    if warmup_steps == 0:
        return torch.full((steps,), float(peak_lr), dtype=torch.float64)
    return peak_lr * torch.clamp((t + 1) / warmup_steps, max=1.0)


def warmup_minimum(steps, peak_lr, warmup_steps):  # warmup 0: (t + 1) / 0 = inf, min(inf, 1) = 1
    ramp = torch.arange(1, steps + 1, dtype=torch.float64) / warmup_steps
    return torch.minimum(ramp, torch.ones(steps, dtype=torch.float64)) * peak_lr


def warmup_list(steps, peak_lr, warmup_steps):
    lrs = [
        peak_lr if warmup_steps == 0 else peak_lr * min(1.0, (t + 1) / warmup_steps)
        for t in range(steps)
    ]
    return torch.tensor(lrs, dtype=torch.float64)


def warmup_linspace(steps, peak_lr, warmup_steps):
    ramp = torch.linspace(
        peak_lr / max(warmup_steps, 1), peak_lr, warmup_steps, dtype=torch.float64
    )
    flat = torch.full((max(steps - warmup_steps, 0),), peak_lr, dtype=torch.float64)
    return torch.cat([ramp, flat])[:steps]


def warmup_loop(steps, peak_lr, warmup_steps):
    lr = torch.empty(steps, dtype=torch.float64)
    for t in range(steps):
        lr[t] = peak_lr * (t + 1) / warmup_steps if t + 1 < warmup_steps else peak_lr
    return lr


# ---------------------------------------------------------------------- update/data ratio


def ratio(before, after):
    return (after - before).std() / before.std()


def ratio_in_float64(before, after):
    update = after.double() - before.double()
    return (update.std() / before.double().std()).to(before.dtype)


def ratio_by_hand(before, after):  # population standard deviations: the 1/n cancels
    def std(t):
        return torch.sqrt(((t - t.mean()) ** 2).mean())

    return std(after - before) / std(before)


def ratio_var_sqrt(before, after):
    return torch.sqrt(torch.var(after - before) / torch.var(before))


def ratio_std_mean(before, after):
    (update_std, _), (data_std, _) = torch.std_mean(after - before), torch.std_mean(before)
    return update_std / data_std


# ---------------------------------------------------------------------- DeepNorm constants


def deepnorm(N):
    return torch.tensor([(2 * N) ** 0.25, (8 * N) ** -0.25], dtype=torch.float64)


def deepnorm_math(N):
    return torch.tensor(
        [math.sqrt(math.sqrt(2 * N)), 1 / math.sqrt(math.sqrt(8 * N))], dtype=torch.float64
    )


def deepnorm_pow(N):
    factors = torch.tensor([2.0, 8.0], dtype=torch.float64) * N
    return factors.pow(torch.tensor([0.25, -0.25], dtype=torch.float64))


def deepnorm_log(N):
    n = torch.tensor(float(N), dtype=torch.float64)
    alpha = torch.exp(0.25 * (math.log(2) + torch.log(n)))
    beta = torch.exp(-0.25 * (math.log(8) + torch.log(n)))
    return torch.stack([alpha, beta])


# -------------------------------------------------------------- correct styles, every seed

STYLES = [
    (check_pre_ln_block, pre_ln_block),
    (check_pre_ln_block, pre_ln_block_loop),
    (check_pre_ln_block, pre_ln_block_named),
    (check_pre_ln_block, pre_ln_block_per_sequence),
    (check_layer_gradient_norms, gradient_norms_backward),
    (check_layer_gradient_norms, gradient_norms_autograd),
    (check_layer_gradient_norms, gradient_norms_named),
    (check_layer_gradient_norms, gradient_norms_vector_norm),
    (check_warmup_schedule, warmup_clamp),
    (check_warmup_schedule, warmup_minimum),
    (check_warmup_schedule, warmup_list),
    (check_warmup_schedule, warmup_linspace),
    (check_warmup_schedule, warmup_loop),
    (check_update_data_ratio, ratio),
    (check_update_data_ratio, ratio_in_float64),
    (check_update_data_ratio, ratio_by_hand),
    (check_update_data_ratio, ratio_var_sqrt),
    (check_update_data_ratio, ratio_std_mean),
    (check_deepnorm_constants, deepnorm),
    (check_deepnorm_constants, deepnorm_math),
    (check_deepnorm_constants, deepnorm_pow),
    (check_deepnorm_constants, deepnorm_log),
]


@pytest.mark.parametrize("check, answer", STYLES, ids=lambda x: getattr(x, "__name__", ""))
def test_every_correct_style_passes_the_visible_and_the_hidden_seeds(check, answer, capsys):
    passes_on_seeds(check, answer, HIDDEN_SEEDS, capsys, cases=COUNTS[check])


def test_each_exercise_has_at_least_three_correct_styles():
    styles = styles_per_check(STYLES, CHECKS)
    assert min(styles.values()) >= 3, styles


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.reference.__name__.strip("_"))
def test_blank_none_and_wrong_type_fail_clearly(check):
    fails_when_unfinished(check)
    fails(check, lambda *a, **k: [1.0], r"returned a list of 1, expected a torch.Tensor")
    fails(check, None, r"this check needs your function, got NoneType")


def test_checks_leave_the_global_random_stream_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    for check, answer in STYLES[::4]:
        check(answer)
    assert torch.equal(torch.rand(3), expected)


# ------------------------------------------------------------ common mistakes, every seed


def post_ln(x, a, f, n1, n2):
    h = n1(x + a(x))
    return n2(h + f(h))


def gradient_norms_without_zero_grad(model, loss_fn):
    loss_fn(model).backward()
    return torch.stack([block.ffn[2].weight.grad.norm() for block in model.blocks])


def gradient_norms_of(pick, reduce=lambda g: g.norm()):
    def wrong(model, loss_fn):
        model.zero_grad()
        loss_fn(model).backward()
        return torch.stack([reduce(pick(block).grad) for block in model.blocks])

    return wrong


def gradient_norms_as_python_floats(model, loss_fn):
    model.zero_grad()
    loss_fn(model).backward()
    return torch.tensor([block.ffn[2].weight.grad.norm().item() for block in model.blocks])


def warmup_off_by_one(s, p, w):
    t = torch.arange(s, dtype=torch.float64)
    return p * torch.clamp(t / max(w, 1), max=1.0)


def warmup_integer_division(s, p, w):
    return torch.tensor(
        [p * min(1, (t + 1) // w) if w else p for t in range(s)], dtype=torch.float64
    )


def warmup_from_zero(s, p, w):  # linspace(0, peak, warmup): the first step gets lr 0
    if w == 0:
        return torch.full((s,), p, dtype=torch.float64)
    ramp = torch.linspace(0.0, p, w, dtype=torch.float64)
    return torch.cat([ramp, torch.full((max(s - w, 0),), p, dtype=torch.float64)])[:s]


def warmup_dividing_by_zero(s, p, w):
    return torch.tensor([p * min(1, (t + 1) / w) for t in range(s)], dtype=torch.float64)


def ratio_mixed(before, after):  # a hand-written 1/n std for the update, torch's 1/(n − 1)
    update = after - before
    return torch.sqrt(((update - update.mean()) ** 2).mean()) / before.std()


MISTAKES = [
    # Pre-LN block
    (check_pre_ln_block, post_ln, "this is Post-LN, x ← LN(x + F(x)) (Eq. 5.3.10)"),
    (
        check_pre_ln_block,
        lambda x, a, f, n1, n2: (lambda h: n2(h) + f(n2(h)))(n1(x) + a(n1(x))),
        "the residual adds LN(x) instead of x",
    ),
    (
        check_pre_ln_block,
        lambda x, a, f, n1, n2: f(n2(x + a(n1(x)))),
        "the FFN sublayer is missing its residual",
    ),
    (
        check_pre_ln_block,
        lambda x, a, f, n1, n2: x + a(n1(x)) + f(n2(x)),
        "the FFN sublayer reads the block input",
    ),
    (
        check_pre_ln_block,
        lambda x, a, f, n1, n2: pre_ln_block(x, a, f, n2, n1),
        "norm1 and norm2 are swapped",
    ),
    (
        check_pre_ln_block,
        lambda x, a, f, n1, n2: pre_ln_block(x, a, f, n1, n1),
        "norm1 was used twice",
    ),
    (
        check_pre_ln_block,
        lambda x, a, f, n1, n2: (lambda h: h + f(n2(h)))(a(n1(x))),
        "the attention sublayer is missing its residual",
    ),
    (
        check_pre_ln_block,
        lambda x, a, f, n1, n2: (lambda h: h + n2(f(h)))(x + n1(a(x))),
        "the sublayers' outputs were normalised, x + LN(F(x))",
    ),
    (
        check_pre_ln_block,
        lambda x, a, f, n1, n2: pre_ln_block(x, f, a, n1, n2),
        "the sublayers are in the wrong order",
    ),
    (
        check_pre_ln_block,
        lambda x, a, f, n1, n2: n2(pre_ln_block(x, a, f, n1, n2)),
        "a LayerNorm was applied to the block's output",
    ),
    # per-layer gradient norms
    (
        check_layer_gradient_norms,
        gradient_norms_without_zero_grad,
        "the gradients were added to those an earlier backward pass left in .grad",
    ),
    (
        check_layer_gradient_norms,
        lambda m, f: torch.stack([b.ffn[2].weight.detach().norm() for b in m.blocks]),
        "these are the norms of the weights W² themselves",
    ),
    (
        check_layer_gradient_norms,
        gradient_norms_of(lambda b: b.ffn[2].weight, lambda g: g.pow(2).sum()),
        "squared norms",
    ),
    (
        check_layer_gradient_norms,
        gradient_norms_of(lambda b: b.ffn[0].weight),
        "this is the FFN's first matrix W¹ (ffn[0])",
    ),
    (
        check_layer_gradient_norms,
        gradient_norms_of(lambda b: b.attn.out_proj.weight),
        "this is the attention's output projection",
    ),
    (
        check_layer_gradient_norms,
        lambda m, f: gradient_norms_backward(m, f).flip(0),
        "the blocks are in reverse order",
    ),
    (
        check_layer_gradient_norms,
        gradient_norms_of(lambda b: b.ffn[2].weight, lambda g: g.abs().mean()),
        "the mean absolute gradient is not the Frobenius norm",
    ),
    (
        check_layer_gradient_norms,
        gradient_norms_of(lambda b: b.ffn[2].weight, lambda g: g.pow(2).mean().sqrt()),
        "the root mean square is not the Frobenius norm",
    ),
    (
        check_layer_gradient_norms,
        gradient_norms_as_python_floats,
        "the norms are float32 (torch.tensor of Python floats): keep the weights' dtype",
    ),
    # warm-up
    (check_warmup_schedule, warmup_off_by_one, "off by one: step t = 0 is the first step"),
    (
        check_warmup_schedule,
        lambda s, p, w: p * (torch.arange(s, dtype=torch.float64) + 1) / max(w, 1),
        "the lr keeps growing after the warm-up",
    ),
    (check_warmup_schedule, warmup_from_zero, "the ramp starts at 0"),
    (check_warmup_schedule, warmup_integer_division, "integer division"),
    (
        check_warmup_schedule,
        lambda s, p, w: warmup_clamp(s, p, w).float(),
        "the schedule is float32: the exercise asks for a float64 tensor",
    ),
    (
        check_warmup_schedule,
        lambda s, p, w: torch.clamp((torch.arange(s) + 1) / max(w, 1), max=1.0) * p,
        "the schedule is float32",
    ),
    (
        check_warmup_schedule,
        warmup_dividing_by_zero,
        "warmup=0 must give the constant peak lr (no division by zero)",
    ),
    # update/data ratio
    (
        check_update_data_ratio,
        lambda b, a: a.std() / b.std(),
        "you compared std(after) with std(before)",
    ),
    (check_update_data_ratio, lambda b, a: b.std() / (a - b).std(), "inverted"),
    (check_update_data_ratio, lambda b, a: torch.log10(ratio(b, a)), "you took log10"),
    (check_update_data_ratio, lambda b, a: (a - b).norm() / b.norm(), "norms (or RMS)"),
    (
        check_update_data_ratio,
        lambda b, a: torch.sqrt(((a - b) ** 2).mean()) / torch.sqrt((b**2).mean()),
        "norms (or RMS)",
    ),
    (check_update_data_ratio, lambda b, a: (a - b).var() / b.var(), "the ratio of variances"),
    (check_update_data_ratio, ratio_mixed, "one standard deviation divides by n and the other"),
    (
        check_update_data_ratio,
        lambda b, a: (a - b).std() / b.std(correction=0),
        "one standard deviation divides by n and the other",
    ),
    (check_update_data_ratio, lambda b, a: ratio(b, a).item(), "expected a torch.Tensor"),
    (
        check_update_data_ratio,
        lambda b, a: ratio(b.double(), a.double()),
        "returned dtype torch.float64, expected torch.float32: keep the input's dtype",
    ),
    # DeepNorm
    (
        check_deepnorm_constants,
        lambda n: deepnorm(n).flip(0),
        "α and β are swapped",
    ),
    (
        check_deepnorm_constants,
        lambda n: torch.tensor([(2 * n) ** 0.25, (8 * n) ** 0.25], dtype=torch.float64),
        "β has the wrong sign in its exponent",
    ),
    (
        check_deepnorm_constants,
        lambda n: torch.tensor([n**0.25, n**-0.25], dtype=torch.float64),
        "the constants use N, not 2N and 8N",
    ),
    (
        check_deepnorm_constants,
        lambda n: torch.tensor([(2 * n) ** 0.5, (8 * n) ** -0.5], dtype=torch.float64),
        "square roots instead of fourth roots",
    ),
    (
        check_deepnorm_constants,
        lambda n: torch.tensor([(8 * n) ** 0.25, (2 * n) ** -0.25], dtype=torch.float64),
        "the 2 and the 8 are swapped",
    ),
    (
        check_deepnorm_constants,
        lambda n: torch.tensor([(3 * n) ** 0.25, (12 * n) ** -0.25], dtype=torch.float64),
        "the decoder's constants in an encoder–decoder model; a decoder-only model",
    ),
    (
        check_deepnorm_constants,
        lambda n: torch.tensor([(2 * n) ** 0.25, (8 * n) ** -0.25]),
        "the tensor is float32, torch.tensor's default for Python floats",
    ),
    (
        check_deepnorm_constants,
        lambda n: ((2 * n) ** 0.25, (8 * n) ** -0.25),
        "returned a tuple of 2, expected a torch.Tensor",
    ),
]


@pytest.mark.parametrize(
    "check, answer, message", MISTAKES, ids=[message[:48] for _, _, message in MISTAKES]
)
def test_common_mistakes_fail_with_their_name_on_every_seed(check, answer, message):
    fails_on_seeds(check, answer, HIDDEN_SEEDS[:6], message)


def test_each_exercise_names_at_least_five_mistakes():
    named = {check: sum(c is check for c, _, _ in MISTAKES) for check in CHECKS}
    assert min(named.values()) >= 5, named


def test_a_float32_computation_made_float64_at_the_end_is_named():
    def warmup_in_float32(steps, peak_lr, warmup_steps):
        t = torch.arange(steps)  # int64: (t + 1) / warmup_steps is float32
        if warmup_steps == 0:
            return torch.full((steps,), peak_lr, dtype=torch.float64)
        return (peak_lr * torch.clamp((t + 1) / warmup_steps, max=1.0)).double()

    def deepnorm_in_float32(N):
        return torch.tensor([(2 * N) ** 0.25, (8 * N) ** -0.25]).double()

    fails_on_seeds(
        check_warmup_schedule, warmup_in_float32, HIDDEN_SEEDS[:3], "float32's precision"
    )
    fails_on_seeds(
        check_deepnorm_constants, deepnorm_in_float32, HIDDEN_SEEDS[:3], "from the start"
    )


def test_a_near_miss_is_not_given_a_mistake_that_matches_the_right_answer():
    """On a small update the tolerance is wide next to the ratio, and n against n − 1 (or norms)
    differ from the right ratio by less than it: those mistakes cannot be named there."""

    def mean_absolute_ratio(before, after):  # wrong: mean |·| is not a standard deviation
        return (after - before).abs().mean() / before.abs().mean()

    for seed in (0, 8, 20):
        with pytest.raises(AssertionError) as info:
            check_update_data_ratio(mean_absolute_ratio, seed=seed)
        message = str(info.value)
        assert "n − 1" not in message and "norms" not in message, (seed, message)
        assert "wrong values" in message, (seed, message)


def test_a_failure_names_the_mistake_the_case_and_its_inputs():
    with pytest.raises(AssertionError) as info:
        check_warmup_schedule(warmup_off_by_one)
    assert str(info.value).startswith(
        "warmup_off_by_one: off by one: step t = 0 is the first step and must already get "
        "peak · 1/warmup, i.e. use (t + 1) / warmup\n  (case 1 of 5: steps=20, peak="
    )
    assert str(info.value).endswith("inputs: int 20, float 0.005062565898895264, int 3)")


# ------------------------------------------------- the chapter's own functions, built-ins


def my_warmup_calls_the_chapter(steps, peak_lr, warmup_steps):
    return warmup_schedule(steps, peak_lr, warmup_steps)


def my_ratio_calls_the_chapter_module(before, after):
    return chapter.update_data_ratio(before, after)


def layer_norm_module(x, a, f, n1, n2):
    norm = nn.LayerNorm(x.shape[-1], dtype=x.dtype)
    h = x + a(norm(x))
    return h + f(norm(h))


REFUSED = [
    # the chapter's functions, handed in as the answer itself (`my_... = deepnorm_constants`)
    (
        check_warmup_schedule,
        warmup_schedule,
        "ch09_pre_ln_vs_post_ln.training.warmup_schedule was called",
    ),
    (
        check_update_data_ratio,
        update_data_ratio,
        "ch09_pre_ln_vs_post_ln.training.update_data_ratio was called",
    ),
    (
        check_deepnorm_constants,
        deepnorm_constants,
        "ch09_pre_ln_vs_post_ln.training.deepnorm_constants was called",
    ),
    (
        check_layer_gradient_norms,
        layer_gradient_norms,
        "ch09_pre_ln_vs_post_ln.model.layer_gradient_norms was called",
    ),
    (
        check_layer_gradient_norms,
        lambda m, f: chapter.layer_gradient_norms(m, f).clone(),
        "uses the course's own attncourse.chapters.ch09_pre_ln_vs_post_ln.layer_gradient_norms",
    ),
    (
        check_layer_gradient_norms,
        lambda m, f: torch.as_tensor(init_gradients("post", len(m.blocks))["w2"]),
        "uses the course's own attncourse.chapters.ch09_pre_ln_vs_post_ln.model.init_gradients",
    ),
    # ... or called from the answer, under its own name or through the module
    (
        check_warmup_schedule,
        my_warmup_calls_the_chapter,
        "uses the course's own attncourse.chapters.ch09_pre_ln_vs_post_ln.training.warmup_schedule",
    ),
    (
        check_update_data_ratio,
        my_ratio_calls_the_chapter_module,
        "uses the course's own attncourse.chapters.ch09_pre_ln_vs_post_ln.update_data_ratio",
    ),
    (
        check_deepnorm_constants,
        lambda n: chapter.deepnorm_constants(n).clone(),
        "uses the course's own attncourse.chapters.ch09_pre_ln_vs_post_ln.deepnorm_constants",
    ),
    # LayerNorm built-ins in place of the given norms
    (
        check_pre_ln_block,
        lambda x, a, f, n1, n2: (lambda h: h + f(F.layer_norm(h, h.shape[-1:])))(
            x + a(F.layer_norm(x, x.shape[-1:]))
        ),
        "uses torch.nn.functional.layer_norm",
    ),
    (check_pre_ln_block, layer_norm_module, "uses torch.nn.LayerNorm"),
    (
        check_pre_ln_block,
        lambda x, a, f, n1, n2: pre_ln_block(
            x, a, f, attncourse.norms.LayerNorm(x.shape[-1]).to(x.dtype), n2
        ),
        "uses the course's own attncourse.norms.LayerNorm",
    ),
]


@pytest.mark.parametrize("check, answer, called", REFUSED, ids=[c for _, _, c in REFUSED])
def test_the_chapter_s_functions_and_built_ins_are_refused(check, answer, called):
    with pytest.raises(AssertionError) as info:
        check(answer)
    assert "must be written from scratch" in str(info.value) and called in str(info.value)


def test_an_answer_without_readable_source_is_refused_at_run_time():
    namespace = {}
    exec(  # no source file: only the run-time guard can see what it calls
        "def hidden(N):\n    return deepnorm_constants(N)\n",
        {"deepnorm_constants": deepnorm_constants},
        namespace,
    )
    fails(check_deepnorm_constants, namespace["hidden"], r"deepnorm_constants was called")


def test_the_chapter_s_functions_work_again_afterwards():
    for check, answer, _ in REFUSED:
        with pytest.raises(AssertionError):
            check(answer)
    torch.testing.assert_close(warmup_schedule(4, 1.0, 2), warmup_clamp(4, 1.0, 2))
    torch.testing.assert_close(deepnorm_constants(6), deepnorm(6))
    b, a = torch.randn(5, 5), torch.randn(5, 5)
    torch.testing.assert_close(chapter.update_data_ratio(b, a), ratio(b, a))
    x = torch.randn(2, 3)
    torch.testing.assert_close(F.layer_norm(x, (3,)), attncourse.norms.LayerNorm(3)(x))


def test_the_notebook_s_hidden_seeds_are_the_suite_s():
    seeds = notebook_hidden_seeds("09_pre_ln_vs_post_ln", exercises)
    assert set(seeds) == set(CHECKS) and set(seeds.values()) <= set(HIDDEN_SEEDS), seeds


def test_the_gradient_norm_check_leaves_stale_gradients_out_of_the_reference():
    """The reference reads the gradients with torch.autograd.grad: the stale .grad of the last
    case is not added to them and stays where it was."""
    case = check_layer_gradient_norms.inputs(0)[-1]
    model, loss_fn = case.args
    stale = [p.grad.clone() for p in model.parameters()]
    expected = check_layer_gradient_norms.expected(case)
    fresh = gradient_norms_autograd(model, loss_fn)
    torch.testing.assert_close(expected, fresh)
    assert all(torch.equal(p.grad, s) for p, s in zip(model.parameters(), stale))
    with_stale = gradient_norms_without_zero_grad(model, loss_fn)
    assert (with_stale - fresh).abs().max() > 1e-3  # the stale case tells the two apart
