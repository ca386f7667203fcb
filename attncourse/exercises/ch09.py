"""Checks for chapter 09's exercises (Pre-LN vs Post-LN stability), declared as
``attncourse.exercises.engine.Exercise``: the Pre-LN block (source 004 Eq. 5.3.11), the per-layer
gradient norms ‖∂L/∂W^{2,l}‖_F of a model at initialisation (Xiong et al. 2020, Fig. 3), a linear
warm-up schedule, the update/data ratio and DeepNorm's constants (Wang et al. 2022). Each compares
the learner's function with the reference on random and edge inputs and names the usual
mistakes. The chapter's own ``layer_gradient_norms``, ``init_gradients``, ``warmup_schedule``,
``update_data_ratio`` and ``deepnorm_constants`` are refused as answers, and so is a LayerNorm
built-in in the block exercise. Each is judged on its own.
"""

from __future__ import annotations

import functools
import math

import torch

from ..chapters import ch09_pre_ln_vs_post_ln as _chapter
from ..threads import single_thread
from .engine import Case, Exercise, Label, float32_hint

# ---------------------------------------------------------------------------- Pre-LN block


class _Sublayers:
    """Fixed random sublayers for the block exercise: a token-mixing 'attention', a ReLU FFN and
    two LayerNorms (plain tensor code, so the check does not depend on the learner's modules)."""

    def __init__(self, g: torch.Generator, T: int, d: int, dtype):
        self.mix = torch.softmax(torch.randn(T, T, generator=g, dtype=dtype), dim=-1)  # (T, T)
        self.w_v = torch.randn(d, d, generator=g, dtype=dtype) / math.sqrt(d)
        self.w1 = torch.randn(d, 2 * d, generator=g, dtype=dtype) / math.sqrt(d)
        self.w2 = torch.randn(2 * d, d, generator=g, dtype=dtype) / math.sqrt(2 * d)
        self.gamma = [1 + 0.3 * torch.randn(d, generator=g, dtype=dtype) for _ in range(2)]
        self.beta = [0.3 * torch.randn(d, generator=g, dtype=dtype) for _ in range(2)]

    def attn(self, x):
        return self.mix @ (x @ self.w_v)  # (..., T, d)

    def ffn(self, x):
        return torch.relu(x @ self.w1) @ self.w2  # (..., T, d)

    def _ln(self, x, i):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return self.gamma[i] * (x - mu) / torch.sqrt(var + 1e-5) + self.beta[i]

    def norm1(self, x):
        return self._ln(x, 0)

    def norm2(self, x):
        return self._ln(x, 1)

    def args(self, x):
        return (x, self.attn, self.ffn, self.norm1, self.norm2)


def _pre_ln_ref(x, attn, ffn, norm1, norm2):
    """x ← x + attn(LN₁(x)); x ← x + ffn(LN₂(x))   (source 004 Eq. 5.3.11, applied twice)."""
    x = x + attn(norm1(x))  # (B, T, d)
    return x + ffn(norm2(x))  # (B, T, d)


def _pre_ln_block_cases(g):
    """fn(x, attn, ffn, norm1, norm2) -> the Pre-LN block's output (Eq. 5.3.11)."""
    cases = []
    for label, B, T, d, dtype in (
        ("x (2, 5, 8)", 2, 5, 8, torch.float32),
        ("x (1, 3, 4)", 1, 3, 4, torch.float32),
        ("x (3, 6, 16), float64", 3, 6, 16, torch.float64),
    ):
        subs = _Sublayers(g, T, d, dtype)
        x = 2.0 * torch.randn(B, T, d, generator=g, dtype=dtype) + 1.0  # not already normalised
        cases.append(Case(label, subs.args(x)))
    diagnoses = [
        (
            "this is Post-LN, x ← LN(x + F(x)) (Eq. 5.3.10); "
            "Pre-LN normalises only the sublayer's input: x ← x + F(LN(x)) (Eq. 5.3.11)",
            lambda x, a, f, n1, n2: (lambda h: n2(h + f(h)))(n1(x + a(x))),
        ),
        (
            "the residual adds LN(x) instead of x: keep the un-normalised x on the identity path, "
            "x + F(LN(x))",
            lambda x, a, f, n1, n2: (lambda h: n2(h) + f(n2(h)))(n1(x) + a(n1(x))),
        ),
        (
            "the FFN sublayer is missing its residual: x ← x + ffn(LN₂(x))",
            lambda x, a, f, n1, n2: f(n2(x + a(n1(x)))),
        ),
        (
            "the FFN sublayer reads the block input; "
            "it must read the output of the attention sublayer",
            lambda x, a, f, n1, n2: x + a(n1(x)) + f(n2(x)),
        ),
        (
            "norm1 and norm2 are swapped: norm1 goes before attn, norm2 before ffn",
            lambda x, a, f, n1, n2: (lambda h: h + f(n1(h)))(x + a(n2(x))),
        ),
        (
            "norm1 was used twice: each sublayer has its own LayerNorm, norm1 before attn and "
            "norm2 before ffn",
            lambda x, a, f, n1, n2: (lambda h: h + f(n1(h)))(x + a(n1(x))),
        ),
        (
            "the attention sublayer is missing its residual: x ← x + attn(LN₁(x))",
            lambda x, a, f, n1, n2: (lambda h: h + f(n2(h)))(a(n1(x))),
        ),
        (
            "the sublayers' outputs were normalised, x + LN(F(x)); Pre-LN normalises their "
            "inputs: x + F(LN(x)) (Eq. 5.3.11)",
            lambda x, a, f, n1, n2: (lambda h: h + n2(f(h)))(x + n1(a(x))),
        ),
        (
            "the sublayers are in the wrong order: attention first (with norm1), then the FFN "
            "(with norm2)",
            lambda x, a, f, n1, n2: (lambda h: h + a(n2(h)))(x + f(n1(x))),
        ),
        (
            "a LayerNorm was applied to the block's output: a Pre-LN block returns the residual "
            "stream as it is, x + ffn(LN₂(x)) (a model adds one final LayerNorm after its last "
            "block, not after each)",
            lambda x, a, f, n1, n2: (lambda h: n2(h + f(n2(h))))(x + a(n1(x))),
        ),
    ]
    return cases, diagnoses


check_pre_ln_block = Exercise(
    _pre_ln_ref,
    _pre_ln_block_cases,
    reimplements=("layer_norm",),
)


# ----------------------------------------------------------------------- per-layer gradient norms


def _gradient_norms_ref(model, loss_fn):
    """‖∂L/∂W^{2,l}‖_F for l = 1 … N (bottom first), in the weights' dtype."""
    weights = [block.ffn[2].weight for block in model.blocks]
    grads = torch.autograd.grad(loss_fn(model), weights)  # no side effect on .grad
    return torch.stack([g.pow(2).sum().sqrt() for g in grads])  # (N,)


def _block_gradients(model, loss_fn, pick):
    """The gradients of the matrices ``pick(block)`` picks, one per block (for the diagnoses)."""
    weights = [pick(block) for block in model.blocks]
    return torch.autograd.grad(loss_fn(model), weights)


def _norms(tensors):
    return torch.stack([t.pow(2).sum().sqrt() for t in tensors])


def _next_token_loss(m, tokens):
    """The next-token cross-entropy of ``m`` on ``tokens`` (B, T + 1), a scalar."""
    return torch.nn.functional.cross_entropy(
        m(tokens[:, :-1]).flatten(0, 1), tokens[:, 1:].flatten()
    )


def _gradient_model(g, norm, num_layers, dtype, stale=False):
    """(model, loss_fn, stale W² gradients or None): a fresh chapter model on random tokens,
    built without moving the global random stream; ``stale`` leaves gradients of an earlier
    backward pass (another batch) in every parameter's ``.grad``."""
    seed = int(torch.randint(2**31 - 1, (1,), generator=g))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _chapter.CausalLM(16, 16, 2, num_layers, norm=norm, max_len=9).to(dtype)
    tokens = torch.randint(16, (3, 9), generator=g)  # (B, T + 1)
    other = torch.randint(16, (3, 9), generator=g)

    loss_fn = functools.partial(_next_token_loss, tokens=tokens)  # picklable: the grader sends it
    old = None
    if stale:
        grads = torch.autograd.grad(
            torch.nn.functional.cross_entropy(
                model(other[:, :-1]).flatten(0, 1), other[:, 1:].flatten()
            ),
            list(model.parameters()),
        )
        for p, grad in zip(model.parameters(), grads):
            p.grad = grad.detach().clone()
        old = [b.ffn[2].weight.grad.detach().clone() for b in model.blocks]
    return model, loss_fn, old


def _gradient_norms_cases(g):
    """fn(model, loss_fn) -> (N,) tensor: ‖∂ loss_fn(model) / ∂W^{2,l}‖_F, l bottom first."""
    cases, diagnoses = [], []
    for label, norm, n, dtype, stale in (
        ("a 3-layer Post-LN model, float32", "post", 3, torch.float32, False),
        ("a 4-layer Pre-LN model, float64", "pre", 4, torch.float64, False),
        ("a 1-layer Pre-LN model (N = 1)", "pre", 1, torch.float32, False),
        (
            "a 2-layer Post-LN model, float64, with gradients of an earlier batch left in .grad",
            "post",
            2,
            torch.float64,
            True,
        ),
    ):
        model, loss_fn, old = _gradient_model(g, norm, n, dtype, stale)
        case_diagnoses = []
        if old is not None:
            case_diagnoses.append(
                (
                    "the gradients were added to those an earlier backward pass left in .grad: "
                    "call model.zero_grad() before loss.backward(), or use torch.autograd.grad",
                    lambda m, f, old=old: _norms(
                        [
                            grad + o
                            for grad, o in zip(
                                _block_gradients(m, f, lambda b: b.ffn[2].weight), old
                            )
                        ]
                    ),
                )
            )
        cases.append(Case(label, (model, loss_fn), diagnoses=case_diagnoses))
    diagnoses = [
        (
            "these are the norms of the weights W² themselves: take the norms of their gradients "
            "(.grad after loss.backward(), or torch.autograd.grad)",
            lambda m, f: _norms([b.ffn[2].weight.detach() for b in m.blocks]),
        ),
        (
            "squared norms: the Frobenius norm is the square root of the sum of the squares",
            lambda m, f: _norms(_block_gradients(m, f, lambda b: b.ffn[2].weight)) ** 2,
        ),
        (
            "this is the FFN's first matrix W¹ (ffn[0]); W^{2,l} is its second, "
            "model.blocks[l].ffn[2].weight",
            lambda m, f: _norms(_block_gradients(m, f, lambda b: b.ffn[0].weight)),
        ),
        (
            "this is the attention's output projection; W^{2,l} is the FFN's second matrix, "
            "model.blocks[l].ffn[2].weight",
            lambda m, f: _norms(_block_gradients(m, f, lambda b: b.attn.out_proj.weight)),
        ),
        (
            "the blocks are in reverse order: entry l is block l, bottom first, as model.blocks "
            "lists them",
            lambda m, f: _norms(_block_gradients(m, f, lambda b: b.ffn[2].weight)).flip(0),
        ),
        (
            "the mean absolute gradient is not the Frobenius norm: "
            "sqrt of the sum of the squared entries",
            lambda m, f: torch.stack(
                [t.abs().mean() for t in _block_gradients(m, f, lambda b: b.ffn[2].weight)]
            ),
        ),
        (
            "the root mean square is not the Frobenius norm: sum the squares, do not average them",
            lambda m, f: torch.stack(
                [t.pow(2).mean().sqrt() for t in _block_gradients(m, f, lambda b: b.ffn[2].weight)]
            ),
        ),
        (
            "the norms are float32 (torch.tensor of Python floats): keep the weights' dtype, "
            "e.g. torch.stack the 0-dim norms",
            lambda m, f: _norms(_block_gradients(m, f, lambda b: b.ffn[2].weight)).float(),
        ),
    ]
    return cases, diagnoses


class _OneThreadExercise(Exercise):
    """An ``Exercise`` whose check runs on one intra-op thread: its cases are forward and backward
    passes of tiny models, which a second thread only slows down (``attncourse.threads``)."""

    def __call__(self, fn, *, seed: int = 0) -> None:
        __tracebackhide__ = True
        with single_thread():
            super().__call__(fn, seed=seed)


check_layer_gradient_norms = _OneThreadExercise(
    _gradient_norms_ref,
    _gradient_norms_cases,
    refuse=(_chapter.layer_gradient_norms, _chapter.init_gradients),
)


# ---------------------------------------------------------------------------- warm-up schedule


def _warmup_ref(steps, peak_lr, warmup_steps):
    t = torch.arange(steps, dtype=torch.float64)  # (steps,)
    if warmup_steps <= 0:
        return torch.full((steps,), float(peak_lr), dtype=torch.float64)
    return peak_lr * torch.clamp((t + 1) / warmup_steps, max=1.0)


FLOAT32_THEN_CAST = (
    "right only to float32's precision (about 7 digits): part of it was computed in float32 and "
    "made float64 at the end (torch.arange(steps) or torch.tensor of Python floats without "
    "dtype=torch.float64); compute in float64 from the start: the check compares at float64's "
    "precision"
)


_float32_hint = float32_hint(FLOAT32_THEN_CAST)


def _warmup_schedule_cases(g):
    """fn(steps, peak_lr, warmup_steps) -> (steps,) float64: peak · min(1, (t + 1) / warmup)."""
    peak = float(torch.rand(1, generator=g)) * 1e-2 + 1e-4
    w = int(torch.randint(3, 12, (1,), generator=g))
    cases = [
        Case(Label("steps=20, peak={peak}, warmup={w}", peak=f"{peak:.4g}", w=w), (20, peak, w)),
        Case("steps=10, peak=1e-3, warmup=4", (10, 1e-3, 4)),
        Case("steps=5, peak=3e-3, warmup=1 (full lr from the first step)", (5, 3e-3, 1)),
        Case("warm-up longer than training: steps=6, warmup=10", (6, 1e-2, 10)),
        Case(
            "no warm-up: warmup=0 means the peak lr at every step",
            (8, 5e-4, 0),
            on_error="warmup=0 must give the constant peak lr (no division by zero)",
        ),
    ]
    for case in cases:
        case.hint = _float32_hint
    diagnoses = [
        (
            "off by one: step t = 0 is the first step and must already get peak · 1/warmup, "
            "i.e. use (t + 1) / warmup",
            lambda s, p, wu: (
                p * torch.clamp(torch.arange(s, dtype=torch.float64) / wu, max=1.0)
                if wu > 0
                else None
            ),
        ),
        (
            "the lr keeps growing after the warm-up: "
            "cap the factor at 1 (min(1, (t + 1) / warmup))",
            lambda s, p, wu: (
                p * (torch.arange(s, dtype=torch.float64) + 1) / wu if wu > 0 else None
            ),
        ),
        (
            "the ramp starts at 0 and reaches the peak at t = warmup − 1 (as "
            "linspace(0, peak, warmup) does): step t = 0 already trains, with peak/warmup; "
            "use (t + 1) / warmup",
            lambda s, p, wu: (
                p * torch.clamp(torch.arange(s, dtype=torch.float64) / (wu - 1), max=1.0)
                if wu > 1
                else None
            ),
        ),
        (
            "integer division: (t + 1) // warmup is 0 until the warm-up ends; "
            "divide with / to get the fraction",
            lambda s, p, wu: (
                p * torch.clamp((torch.arange(s, dtype=torch.float64) + 1) // wu, max=1.0)
                if wu > 0
                else None
            ),
        ),
        (
            "the schedule is float32: the exercise asks for a float64 tensor "
            "(e.g. torch.arange(steps, dtype=torch.float64))",
            lambda s, p, wu: _warmup_ref(s, p, wu).float(),
        ),
    ]
    return cases, diagnoses


check_warmup_schedule = Exercise(
    _warmup_ref,
    _warmup_schedule_cases,
    refuse=(_chapter.warmup_schedule,),
)


# ---------------------------------------------------------------------------- update / data ratio


def _ratio_ref(before, after):
    return (after - before).std() / before.std()


def _update_data_ratio_cases(g):
    """fn(before, after) -> 0-dim tensor std(after − before) / std(before)."""
    cases = []
    for label, shape, scale, offset in (
        ("a (16, 8) weight, small update", (16, 8), 1e-3, 0.0),
        ("a (32, 32) weight with mean 2", (32, 32), 1e-2, 2.0),
        ("a (64,) bias-like vector, large update", (64,), 0.5, 0.0),
    ):
        before = torch.randn(*shape, generator=g) + offset
        after = before + scale * torch.randn(*shape, generator=g) + 0.1 * scale
        cases.append(Case(label, (before, after)))
    b = torch.randn(10, 10, generator=g, dtype=torch.float64)
    cases.append(Case("float64, no change: ratio 0", (b, b.clone())))
    diagnoses = [
        (
            "you compared std(after) with std(before); the ratio is about the *update*: "
            "std(after − before) / std(before)",
            lambda b, a: a.std() / b.std(),
        ),
        (
            "inverted: it is std(update) / std(data), not std(data) / std(update)",
            lambda b, a: b.std() / (a - b).std(),
        ),
        (
            "you took log10; return the plain ratio (the plot takes the log)",
            lambda b, a: torch.log10((a - b).std() / b.std()),
        ),
        (
            "you used norms (or RMS) instead of standard deviations: subtract the mean, "
            "i.e. use .std()",
            lambda b, a: (a - b).norm() / b.norm(),
        ),
        (
            "you returned the ratio of variances: take standard deviations (the square roots)",
            lambda b, a: (a - b).var() / b.var(),
        ),
        (
            "one standard deviation divides by n and the other by n − 1: use the same for both "
            "(the ratio is then the same whichever you choose)",
            lambda b, a: (a - b).std(correction=0) / b.std(),
        ),
        (
            "one standard deviation divides by n and the other by n − 1: use the same for both "
            "(the ratio is then the same whichever you choose)",
            lambda b, a: (a - b).std() / b.std(correction=0),
        ),
    ]
    return cases, diagnoses


check_update_data_ratio = Exercise(
    _ratio_ref,
    _update_data_ratio_cases,
    refuse=(_chapter.update_data_ratio,),
)


# ---------------------------------------------------------------------------- DeepNorm constants


def _deepnorm_ref(num_layers):
    return torch.tensor([(2 * num_layers) ** 0.25, (8 * num_layers) ** -0.25], dtype=torch.float64)


def _deepnorm_constants_cases(g):
    """fn(N) -> tensor([α, β]) float64 for an N-layer decoder-only DeepNorm model
    (Wang et al. 2022; an encoder-only model has the same constants).
    """
    ns = [1, 6, 12] + [int(torch.randint(2, 1000, (1,), generator=g)) for _ in range(2)]
    cases = [Case(Label("N = {n}", n=n), (n,), hint=_float32_hint) for n in ns]
    diagnoses = [
        (
            "α and β are swapped: α = (2N)^¼ scales the residual, β = (8N)^−¼ the initialisation",
            lambda n: _deepnorm_ref(n).flip(0),
        ),
        (
            "β has the wrong sign in its exponent: β = (8N)^(−1/4) < 1 shrinks the initialisation",
            lambda n: torch.tensor([(2 * n) ** 0.25, (8 * n) ** 0.25], dtype=torch.float64),
        ),
        (
            "the constants use N, not 2N and 8N: α = (2N)^¼, β = (8N)^−¼",
            lambda n: torch.tensor([n**0.25, n**-0.25], dtype=torch.float64),
        ),
        (
            "square roots instead of fourth roots: α = (2N)^¼, β = (8N)^−¼",
            lambda n: torch.tensor([(2 * n) ** 0.5, (8 * n) ** -0.5], dtype=torch.float64),
        ),
        (
            "the 2 and the 8 are swapped: α = (2N)^¼, β = (8N)^−¼",
            lambda n: torch.tensor([(8 * n) ** 0.25, (2 * n) ** -0.25], dtype=torch.float64),
        ),
        (
            "(3N)^¼ and (12N)^−¼ are the decoder's constants in an encoder–decoder model; "
            "a decoder-only model (like an encoder-only one) uses α = (2N)^¼, β = (8N)^−¼",
            lambda n: torch.tensor([(3 * n) ** 0.25, (12 * n) ** -0.25], dtype=torch.float64),
        ),
        (
            "the tensor is float32, torch.tensor's default for Python floats: "
            "pass dtype=torch.float64",
            lambda n: _deepnorm_ref(n).float(),
        ),
    ]
    return cases, diagnoses


check_deepnorm_constants = Exercise(
    _deepnorm_ref,
    _deepnorm_constants_cases,
    refuse=(_chapter.deepnorm_constants,),
)
