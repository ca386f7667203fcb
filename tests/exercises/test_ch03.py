"""Chapter 03's exercise checks pass correct solutions and name each common mistake."""

import math

import pytest
import torch
from exercise_helpers import (
    fails,
    fails_when_unfinished,
    fails_with,
    passes_on_seeds,
    styles_per_check,
)

import attncourse.chapters.ch03_entropy_and_temperature
import attncourse.guard
from attncourse.exercises.ch03 import (
    check_cosine_temperature,
    check_entropy_temperature,
    check_hoeffding_bound,
    check_softmax_jacobian,
    check_softmax_temperature,
    plain_softmax_t,
)

# ----------------------------------------------------------------------- correct solutions


def softmax_t(s, T):
    z = s / T
    e = torch.exp(z - z.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def entropy_t(s, T, softmax_t=softmax_t):
    a = softmax_t(s, T)
    return -(a * torch.log(torch.where(a > 0, a, torch.ones_like(a)))).sum(-1)


def entropy_t_logsumexp(s, T, softmax_t=softmax_t):  # the other formula: logsumexp(z) - Σ α z
    z = s / T
    z = z - z.amax(dim=-1, keepdim=True)
    a = softmax_t(s, T)
    return torch.log(torch.exp(z).sum(-1)) - (a * z).sum(-1)


def jacobian(a):
    return torch.diag_embed(a) - a.unsqueeze(-1) * a.unsqueeze(-2)


def cosine(t, N, t0, tmin):
    return tmin + (t0 - tmin) * (1 + torch.cos(math.pi * t / N)) / 2


def hoeffding(s):
    return math.log(s.shape[-1]) - (s.amax(-1) - s.amin(-1)) ** 2 / 8


@pytest.mark.parametrize(
    "check, solution, count",
    [
        (check_softmax_temperature, softmax_t, 8),
        (check_entropy_temperature, entropy_t, 8),
        (check_entropy_temperature, entropy_t_logsumexp, 8),
        (check_softmax_jacobian, jacobian, 6),
        (check_cosine_temperature, cosine, 6),
        (check_hoeffding_bound, hoeffding, 6),
    ],
)
@pytest.mark.parametrize("seed", [0, 31])
def test_a_correct_solution_passes_with_one_line(check, solution, count, seed, capsys):
    check(solution, seed=seed)
    assert capsys.readouterr().out == f"✓ {solution.__name__}: all {count} checks passed\n"


@pytest.mark.parametrize(
    "check",
    [
        check_softmax_temperature,
        check_entropy_temperature,
        check_softmax_jacobian,
        check_cosine_temperature,
        check_hoeffding_bound,
    ],
)
def test_an_unfinished_exercise_says_so(check):
    fails_when_unfinished(check)


def test_softmax_temperature_mistakes_are_named():
    fails(
        check_softmax_temperature, lambda s, T: softmax_t(s * T, 1.0), "multiplied the scores by T"
    )
    fails(check_softmax_temperature, lambda s, T: softmax_t(s, 1.0), "temperature is ignored")
    fails(check_softmax_temperature, lambda s, T: softmax_t(s, T**2), "divided by T²")
    fails(
        check_softmax_temperature,
        lambda s, T: (
            softmax_t(s.transpose(0, -1), T).transpose(0, -1) if s.dim() > 1 else softmax_t(s, T)
        ),
        "wrong axis",
    )
    naive = lambda s, T: torch.exp(s / T) / torch.exp(s / T).sum(-1, keepdim=True)  # noqa: E731
    fails(check_softmax_temperature, naive, "overflow at a small temperature")
    fails(
        check_softmax_temperature,
        lambda s, T: torch.softmax(s / T, -1),
        "from scratch.*torch.softmax",
    )
    fails(
        check_softmax_temperature,
        lambda s, T: attncourse.attention.softmax(s, temperature=T),
        "from scratch.*course's own attncourse.attention.softmax",
    )


def test_entropy_temperature_mistakes_are_named():
    nan_at_zero = lambda s, T, softmax_t: -(softmax_t(s, T) * softmax_t(s, T).log()).sum(-1)  # noqa: E731
    fails(check_entropy_temperature, nan_at_zero, "0·log 0")
    fails(check_entropy_temperature, lambda s, T, **_: entropy_t(s, 1.0), "temperature is ignored")
    fails(check_entropy_temperature, lambda s, T, **_: entropy_t(s, T) / math.log(2), "log2")
    fails(check_entropy_temperature, lambda s, T, **_: -entropy_t(s, T), "sign is flipped")
    fails(check_entropy_temperature, lambda s, T, **_: entropy_t(s, T) / s.shape[-1], "averaged")
    fails(
        check_entropy_temperature,
        lambda s, T, **_: attncourse.chapters.ch03_entropy_and_temperature.entropy_of_scores(s, T),
        "from scratch.*course's own .*entropy_of_scores",
    )
    fails(
        check_entropy_temperature,
        lambda s, T: entropy_t(s, T),
        "parameters must be the ones the text gives",
    )
    too_large = lambda s, T, softmax_t: -(softmax_t(s, T) * (softmax_t(s, T) + 1e-5).log()).sum(-1)  # noqa: E731
    fails(check_entropy_temperature, too_large, "more than an ε-guard of 1e-09 explains")
    in_float64 = lambda s, T, softmax_t: -torch.xlogy(*[softmax_t(s, T).double()] * 2).sum(-1)  # noqa: E731
    message = fails_with(check_entropy_temperature, in_float64, "returned dtype torch.float64")
    assert "ε-guard" not in message, message


def softmax_t_via_logsumexp(s, T):  # a correct softmax whose float32 weights carry z's rounding
    z = s / T
    return torch.exp(z - torch.logsumexp(z, dim=-1, keepdim=True))


def unfinished_softmax_t(s, T):
    raise NotImplementedError()


def test_the_entropy_is_judged_on_its_own_not_on_the_learner_s_softmax():
    """logsumexp(z) − Σ α z is a correct entropy; computed on the weights of the learner's own
    softmax exp(z − logsumexp z), whose float32 rounding at z = s / T in the thousands Σ α z
    multiplies, it is off by about 0.06 nats at T = 0.001. The check passes the course's softmax
    (softmax_t=), so the entropy passes whatever the learner's softmax is — unfinished included."""

    def entropy_unshifted(s, T, softmax_t=softmax_t_via_logsumexp):
        z = s / T
        return torch.logsumexp(z, dim=-1) - (softmax_t(s, T) * z).sum(-1)

    def entropy_on_an_unfinished_softmax(s, T, softmax_t=unfinished_softmax_t):
        a = softmax_t(s, T)
        return -(a * torch.log(torch.where(a > 0, a, torch.ones_like(a)))).sum(-1)

    for answer in (entropy_unshifted, entropy_on_an_unfinished_softmax):
        for seed in HIDDEN_SEEDS:
            check_entropy_temperature(answer, seed=seed)
    tie = torch.tensor([[0.5, 2.0, 2.0, -1.0, 0.3]])
    own = float(entropy_unshifted(tie, 0.001))  # the learner's own weights: not what is graded
    assert abs(own - math.log(2)) > 0.01, own
    given = float(entropy_unshifted(tie, 0.001, softmax_t=plain_softmax_t))
    assert abs(given - math.log(2)) < 1e-3, given


def test_the_softmax_the_entropy_check_passes_is_plain_and_right():
    s = torch.randn(3, 7, dtype=torch.float64) * 4
    for T in (0.001, 0.3, 5.0):
        assert torch.allclose(plain_softmax_t(s, T), torch.softmax(s / T, -1))
    with attncourse.guard.refusing(("softmax",)):
        plain_softmax_t(s, 0.5)  # calls no softmax of PyTorch's or the course's


def test_jacobian_mistakes_are_named():
    outer = lambda a: a.unsqueeze(-1) * a.unsqueeze(-2)  # noqa: E731
    fails(check_softmax_jacobian, lambda a: outer(a) - torch.diag_embed(a), "sign is flipped")
    fails(check_softmax_jacobian, lambda a: torch.diag_embed(a), "missing −α αᵀ")
    fails(check_softmax_jacobian, lambda a: -outer(a), "missing diag")
    fails(check_softmax_jacobian, lambda a: torch.diag_embed(a - a * a), "only the diagonal")


def test_cosine_schedule_mistakes_are_named():
    fails(check_cosine_temperature, lambda t, N, a, b: cosine(t, N, b, a), "swapped")
    fails(
        check_cosine_temperature,
        lambda t, N, a, b: b + (a - b) * (1 + torch.cos(math.pi * t / N)),
        "missing the / 2",
    )
    fails(check_cosine_temperature, lambda t, N, a, b: cosine(2 * t, N, a, b), "full period")
    fails(check_cosine_temperature, lambda t, N, a, b: a + (b - a) * t / N, "linear schedule")
    fails(
        check_cosine_temperature, lambda t, N, a, b: cosine(t + 1, N, a, b), "shifted by one step"
    )


def test_hoeffding_bound_mistakes_are_named():
    r = lambda s: s.amax(-1) - s.amin(-1)  # noqa: E731
    fails(check_hoeffding_bound, lambda s: math.log2(s.shape[-1]) - r(s) ** 2 / 8, "log2 n")
    fails(check_hoeffding_bound, lambda s: math.log(s.shape[-1]) - r(s) ** 2 / 4, "divided by 4")
    fails(check_hoeffding_bound, lambda s: math.log(s.shape[-1]) - r(s) / 8, "squared")
    fails(check_hoeffding_bound, lambda s: math.log(s.shape[-1]) + r(s) ** 2 / 8, "MINUS")
    fails(
        check_hoeffding_bound,
        lambda s: math.log(s.shape[-1]) - (s.amax() - s.amin()) ** 2 / 8,
        "each row",
    )


def test_the_course_s_functions_are_restored_after_a_refused_call():
    s = torch.tensor([[0.0, 1.0]])
    before = attncourse.chapters.ch03_entropy_and_temperature.entropy_of_scores(s, 1.0)
    with pytest.raises(AssertionError):
        check_entropy_temperature(
            lambda s, T: attncourse.chapters.ch03_entropy_and_temperature.entropy_of_scores(s, T)
        )
    assert torch.equal(
        attncourse.chapters.ch03_entropy_and_temperature.entropy_of_scores(s, 1.0), before
    )


def test_module_exports_the_documented_checks():
    import attncourse.exercises.ch03 as ex3

    assert sorted(ex3.__all__) == [
        "check_cosine_temperature",
        "check_entropy_temperature",
        "check_hoeffding_bound",
        "check_softmax_jacobian",
        "check_softmax_temperature",
    ]
    assert all(callable(getattr(ex3, name)) for name in ex3.__all__)


# ------------------------------------------------ correct answers in other styles, every seed

HIDDEN_SEEDS = (0, 31, 32, 33, 34, 35, 2024)  # the visible seed, the notebook's hidden ones, more


def softmax_t_logsumexp(s, T):
    z = s / T
    return torch.exp(z - torch.logsumexp(z, dim=-1, keepdim=True))


def softmax_t_float64(s, T):
    z = s.double() / T
    e = torch.exp(z - z.amax(dim=-1, keepdim=True))
    return (e / e.sum(dim=-1, keepdim=True)).to(s.dtype)


def entropy_t_log_softmax(s, T, softmax_t=None):  # does not use the softmax it is given
    z = s / T
    log_a = z - torch.logsumexp(z, dim=-1, keepdim=True)
    return -(log_a.exp() * log_a).sum(-1)


def entropy_t_xlogy(s, T, softmax_t=softmax_t_logsumexp):
    a = softmax_t(s, T)
    return -torch.special.xlogy(a, a).sum(-1)


def entropy_t_eps_guarded(
    s, T, softmax_t=softmax_t
):  # log(α + ε): a tiny bias, within the tolerance
    a = softmax_t(s, T)
    return -(a * torch.log(a + 1e-12)).sum(-1)


def entropy_t_logsumexp_unshifted(s, T, softmax_t=softmax_t):  # logsumexp shifts internally
    z = s / T
    return torch.logsumexp(z, dim=-1) - (softmax_t(s, T) * z).sum(-1)


def jacobian_loops(a):
    n = a.shape[-1]
    rows = [[a[..., i] * (float(i == j) - a[..., j]) for j in range(n)] for i in range(n)]
    return torch.stack([torch.stack(row, -1) for row in rows], -2)


def jacobian_einsum(a):
    return torch.diag_embed(a) - torch.einsum("...i,...j->...ij", a, a)


def cosine_half_angle(t, N, t0, tmin):  # (1 + cos x) / 2 = cos²(x / 2)
    return tmin + (t0 - tmin) * torch.cos(math.pi * t / (2 * N)) ** 2


def cosine_float64(t, N, t0, tmin):
    x = t.double() * math.pi / N
    return (tmin + 0.5 * (t0 - tmin) * (1 + torch.cos(x))).to(t.dtype)


def hoeffding_sorted(s):
    ordered = s.sort(dim=-1).values
    return math.log(s.shape[-1]) - (ordered[..., -1] - ordered[..., 0]).pow(2) / 8


def hoeffding_aminmax(s):
    low, high = torch.aminmax(s, dim=-1)
    return torch.log(torch.tensor(float(s.shape[-1]), dtype=s.dtype)) - (high - low) ** 2 / 8


STYLES = [
    (check_softmax_temperature, softmax_t),
    (check_softmax_temperature, softmax_t_logsumexp),
    (check_softmax_temperature, softmax_t_float64),
    (check_entropy_temperature, entropy_t),
    (check_entropy_temperature, entropy_t_logsumexp),
    (check_entropy_temperature, entropy_t_log_softmax),
    (check_entropy_temperature, entropy_t_xlogy),
    (check_entropy_temperature, entropy_t_eps_guarded),
    (check_entropy_temperature, entropy_t_logsumexp_unshifted),
    (check_softmax_jacobian, jacobian),
    (check_softmax_jacobian, jacobian_loops),
    (check_softmax_jacobian, jacobian_einsum),
    (check_cosine_temperature, cosine),
    (check_cosine_temperature, cosine_half_angle),
    (check_cosine_temperature, cosine_float64),
    (check_hoeffding_bound, hoeffding),
    (check_hoeffding_bound, hoeffding_sorted),
    (check_hoeffding_bound, hoeffding_aminmax),
]


@pytest.mark.parametrize("check, answer", STYLES, ids=lambda x: getattr(x, "__name__", ""))
def test_every_correct_style_passes_the_visible_and_the_hidden_seeds(check, answer, capsys):
    passes_on_seeds(check, answer, HIDDEN_SEEDS, capsys)


def test_each_exercise_has_at_least_three_correct_styles():
    counts = styles_per_check(STYLES, {check for check, _ in STYLES})
    assert len(counts) == 5 and min(counts.values()) >= 3, counts


chapter = attncourse.chapters.ch03_entropy_and_temperature
MISTAKES = [
    (check_softmax_temperature, lambda s, T: softmax_t(s * T, 1.0), "multiplied the scores by T"),
    (check_softmax_temperature, lambda s, T: softmax_t(s, 1.0), "the temperature is ignored"),
    (
        check_entropy_temperature,
        lambda s, T, softmax_t: chapter.entropy_of_scores(s, T),
        "course's own",
    ),
    (check_softmax_jacobian, lambda a: torch.diag_embed(a), "missing −α αᵀ"),
    (
        check_softmax_jacobian,
        lambda a: torch.autograd.functional.jacobian(lambda s: softmax_t(s, 1.0), a.log()),
        "from scratch",
    ),
    (check_cosine_temperature, lambda t, N, a, b: cosine(t, N, b, a), "swapped"),
    (
        check_cosine_temperature,
        lambda t, N, a, b: chapter.cosine_temperature(t, N, a, b).to(t.dtype),
        "course's own",
    ),
    (check_cosine_temperature, lambda t, N, a, b: math.cos(t), "use the torch version"),
    (check_hoeffding_bound, lambda s: chapter.hoeffding_entropy_bound(s), "course's own"),
    (
        check_hoeffding_bound,
        lambda s: math.log(s.numel()) - (s.amax(-1) - s.amin(-1)) ** 2 / 8,
        "n is the number of keys",
    ),
    (
        check_hoeffding_bound,
        lambda s: math.log(s.shape[-1]) - (s.amax() - s.amin()) ** 2 / 8,
        "range of each row",
    ),
    (  # float64 scores with a float32 log n: the rule the exercise text states, named
        check_hoeffding_bound,
        lambda s: torch.log(torch.tensor(float(s.shape[-1]))) - (s.amax(-1) - s.amin(-1)) ** 2 / 8,
        "a constant was made a float32 tensor",
    ),
    (
        check_cosine_temperature,
        lambda t, N, a, b: b + (a - b) * (1 + torch.cos(torch.tensor(math.pi) * t / N)) / 2,
        "a constant was made a float32 tensor",
    ),
]


@pytest.mark.parametrize("check, answer, message", MISTAKES)
def test_common_mistakes_fail_with_their_name_on_every_seed(check, answer, message):
    for seed in HIDDEN_SEEDS[:3]:
        with pytest.raises(AssertionError, match=message):
            check(answer, seed=seed)
