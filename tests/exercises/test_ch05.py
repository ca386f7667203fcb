"""Chapter 05's answer suite: correct answers in the styles a learner plausibly writes pass the
visible check and the hidden seeds; each common mistake fails with the message that names it, a
broken dtype rule included; the course's own functions are refused."""

from pathlib import Path

import pytest
import torch
from exercise_helpers import (
    blank,
    fails_on_seeds,
    fails_when_unfinished,
    fails_with,
    notebook_hidden_seeds,
    passes_on_seeds,
    styles_per_check,
)

import attncourse.flow
from attncourse.exercises import ch05 as exercises_ch05
from attncourse.exercises.ch05 import (
    check_flow_split,
    check_reachability,
    check_rollout,
    check_two_layer_flow,
)
from attncourse.flow import attention_flow

CHECKS = {  # the number of cases each check runs, and the notebook's hidden seed
    check_reachability: (8, 52),
    check_flow_split: (7, 51),
    check_rollout: (6, 53),
    check_two_layer_flow: (6, 54),
}
MORE_SEEDS = (1, 7, 2024)


def seeds(check, more=MORE_SEEDS):
    """The visible seed 0, the seed of the notebook's hidden test, and ``more``."""
    return (0, CHECKS[check][1], *more)


# ---------------------------------------------------------------------- 1: flow split


def split_where(w):
    T = w.shape[-1]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    zero = torch.zeros((), dtype=w.dtype)
    return tuple(torch.where(m, w, zero).sum((-2, -1)) for m in (j < i, j > i, j == i))


def split_tril(w):
    forward = torch.tril(w, diagonal=-1).sum((-2, -1))
    backward = torch.triu(w, diagonal=1).sum((-2, -1))
    own = torch.diagonal(w, dim1=-2, dim2=-1).sum(-1)
    return forward, backward, own


def split_loops(w):
    T = w.shape[-1]
    flat = w.reshape(-1, T, T)
    parts = [torch.zeros(flat.shape[0], dtype=w.dtype) for _ in range(3)]
    for b in range(flat.shape[0]):
        for i in range(T):
            for j in range(T):
                which = 0 if j < i else 1 if j > i else 2
                parts[which][b] = parts[which][b] + flat[b, i, j]
    return tuple(p.reshape(w.shape[:-2]) for p in parts)


def split_total_minus(w):  # backward = total - forward - self
    forward = torch.tril(w, diagonal=-1).sum((-2, -1))
    own = torch.diagonal(w, dim1=-2, dim2=-1).sum(-1)
    return forward, w.sum((-2, -1)) - forward - own, own


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda w: (split_tril(w)[1], split_tril(w)[0], split_tril(w)[2]), "swapped"),
        (
            lambda w: (torch.tril(w).sum((-2, -1)), split_tril(w)[1], split_tril(w)[2]),
            "counted in the forward flow",
        ),
        (
            lambda w: (split_tril(w)[0], torch.triu(w).sum((-2, -1)), split_tril(w)[2]),
            "counted in the backward flow",
        ),
        (lambda w: tuple(p / w.sum((-2, -1)) for p in split_tril(w)), "divided the sums"),
        (lambda w: tuple(p / w.shape[-2] for p in split_tril(w)), "divided the sums"),
    ],
)
def test_flow_split_names_each_mistake(wrong, fragment):
    fails_with(check_flow_split, wrong, fragment)


def test_flow_split_refuses_the_package_and_a_blank_answer():
    fails_with(check_flow_split, lambda w: tuple(attncourse.flow.directional_flow(w)), "scratch")
    fails_with(check_flow_split, blank, "not implemented yet")


# -------------------------------------------------------------------- 2: reachability


def reach_loop(mask, layers):
    T = mask.shape[0]
    step = (mask | torch.eye(T, dtype=torch.bool)).double()
    reach = torch.eye(T, dtype=torch.double)
    for _ in range(layers):
        reach = ((step @ reach) > 0).double()
    return reach > 0


def reach_matrix_power(mask, layers):
    T = mask.shape[0]
    step = (mask | torch.eye(T, dtype=torch.bool)).double()
    return torch.linalg.matrix_power(step, layers) > 0  # counts paths; > 0 where one exists


def reach_sets(mask, layers):  # breadth-first, one frontier per output position
    T = mask.shape[0]
    out = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        known = {i}
        for _ in range(layers):
            known = known | {j for k in known for j in range(T) if mask[k, j]}
        out[i, sorted(known)] = True
    return out


def reach_any(mask, layers):  # boolean product without a matmul
    T = mask.shape[0]
    step = mask | torch.eye(T, dtype=torch.bool)
    reach = torch.eye(T, dtype=torch.bool)
    for _ in range(layers):
        reach = (step[:, :, None] & reach[None, :, :]).any(dim=1)
    return reach


def no_residual(mask, layers):
    reach = torch.eye(mask.shape[0], dtype=torch.double)
    for _ in range(layers):
        reach = ((mask.double() @ reach) > 0).double()
    return reach > 0


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (no_residual, "no residual path"),
        (lambda m, L: reach_loop(m, max(L - 1, 0)), "one layer too few"),
        (lambda m, L: reach_loop(m, min(L, 1)), "only one layer"),
        (lambda m, L: reach_loop(m, L).T, "transposed"),
    ],
)
def test_reachability_names_each_mistake(wrong, fragment):
    fails_with(check_reachability, wrong, fragment)


def test_reachability_refuses_the_package_and_a_blank_answer():
    fails_with(check_reachability, lambda m, L: attncourse.flow.reachability(m, L), "scratch")
    fails_with(check_reachability, blank, "not implemented yet")


# ------------------------------------------------------------------------- 3: rollout


def rollout_loop(layers):
    T = layers[0].shape[-1]
    eye = torch.eye(T, dtype=layers[0].dtype)
    result = eye
    for w in layers:
        result = (0.5 * eye + 0.5 * w.mean(1)) @ result
    return result


def rollout_einsum(layers):
    T = layers[0].shape[-1]
    eye = torch.eye(T, dtype=layers[0].dtype)
    mixed = [0.5 * eye + 0.25 * w.sum(1) * (2 / w.shape[1]) for w in layers]
    result = mixed[0]
    for m in mixed[1:]:
        result = torch.einsum("bik,bkj->bij", m, result)
    return result


def rollout_reversed_list(layers):  # multiply from the top down, right-multiplying
    T = layers[0].shape[-1]
    eye = torch.eye(T, dtype=layers[0].dtype)
    result = None
    for w in reversed(layers):
        m = 0.5 * eye + 0.5 * w.mean(1)
        result = m if result is None else result @ m
    return result


def rollout_renormalised(layers):  # the paper's "re-normalise" step (rows already sum to 1)
    T = layers[0].shape[-1]
    result = None
    for w in layers:
        a = w.mean(1) + torch.eye(T, dtype=w.dtype)
        a = a / a.sum(-1, keepdim=True)
        result = a if result is None else a @ result
    return result


def rollout_variant(layers, order="top_left", residual=0.5, heads="mean", combine="product"):
    T = layers[0].shape[-1]
    eye = torch.eye(T, dtype=layers[0].dtype)
    mats = []
    for w in layers:
        a = {"mean": w.mean(1), "first": w[:, 0], "sum": w.sum(1)}[heads]
        if residual == "add":
            mats.append(a + eye)
        elif residual == "half_eye":
            mats.append(0.5 * eye + a)
        else:
            mats.append(residual * eye + (1 - residual) * a)
    if combine == "mean":
        return sum(mats) / len(mats)
    result = mats[0]
    for m in mats[1:]:
        result = m @ result if order == "top_left" else result @ m
    return result


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda ls: rollout_variant(ls, order="bottom_left"), "wrong order"),
        (lambda ls: rollout_variant(ls, residual=0.0), "no residual"),
        (lambda ls: rollout_variant(ls, residual="add"), "½ I + ½ A"),
        (lambda ls: rollout_variant(ls, residual="half_eye"), "lacks its ½"),
        (lambda ls: rollout_variant(ls, heads="first"), "used one head"),
        (lambda ls: rollout_variant(ls, heads="sum"), "summed the heads"),
        (lambda ls: rollout_variant(ls, combine="mean"), "averaged the layers"),
    ],
)
def test_rollout_names_each_mistake(wrong, fragment):
    fails_with(check_rollout, wrong, fragment)


def test_rollout_refuses_the_package_and_a_blank_answer():
    fails_with(check_rollout, lambda ls: attncourse.flow.attention_rollout(list(ls)), "scratch")
    fails_with(check_rollout, blank, "not implemented yet")


# ------------------------------------------------------------------ 4: two-layer flow


def flow_broadcast(first, second):
    return torch.minimum(first.unsqueeze(0), second.unsqueeze(-1)).sum(-2)


def flow_loops(first, second):
    T = first.shape[0]
    out = torch.zeros(T, T, dtype=first.dtype)
    for i in range(T):
        for j in range(T):
            out[i, j] = sum(torch.minimum(first[k, j], second[i, k]) for k in range(T))
    return out


def flow_columns(first, second):  # one input column at a time
    return torch.stack(
        [torch.minimum(first[:, j][None, :], second).sum(-1) for j in range(first.shape[1])], dim=1
    )


def flow_where(first, second):
    a, b = first.unsqueeze(0), second.unsqueeze(-1)  # (1, k, j), (i, k, 1)
    return torch.where(a < b, a, b).sum(1)


def test_the_closed_form_is_the_maximum_flow_of_the_two_layer_graph():
    g = torch.Generator().manual_seed(0)
    first = torch.softmax(torch.randn(5, 5, generator=g, dtype=torch.float64), -1)
    second = torch.softmax(torch.randn(5, 5, generator=g, dtype=torch.float64), -1)
    general = attention_flow([first[None], second[None]], residual=0.0)  # one head, no batch
    torch.testing.assert_close(general, flow_broadcast(first, second))


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda a, b: b @ a, "that is rollout"),
        (
            lambda a, b: torch.minimum(a.unsqueeze(0), b.unsqueeze(-1)).amax(-2),
            "took the largest path only",
        ),
        (lambda a, b: flow_broadcast(b, a), "the layers are swapped"),
        (lambda a, b: flow_broadcast(a, b).T, "transposed"),
        (
            lambda a, b: torch.minimum(a.sum(0).unsqueeze(0), b.sum(1).unsqueeze(1)),
            "min of the two totals",
        ),
    ],
)
def test_two_layer_flow_names_each_mistake(wrong, fragment):
    fails_with(check_two_layer_flow, wrong, fragment)


def test_two_layer_flow_refuses_the_package_and_a_blank_answer():
    fails_with(
        check_two_layer_flow,
        lambda a, b: attncourse.flow.attention_flow([a[None, None], b[None, None]], residual=0.0),
        "scratch",
    )
    fails_with(check_two_layer_flow, blank, "not implemented yet")


# ------------------------------------------------------- the dtype rule each text states


def split_in_float64(w):  # computed in float64, handed back in the input's dtype: passes
    return tuple(p.to(w.dtype) for p in split_tril(w.double()))


def rollout_in_float64(layers):
    return rollout_loop(tuple(w.double() for w in layers)).to(layers[0].dtype)


def flow_in_float64(first, second):
    return flow_broadcast(first.double(), second.double()).to(first.dtype)


def reach_counts(mask, layers):  # path counts in int64, tested > 0 at the end
    T = mask.shape[0]
    step = (mask | torch.eye(T, dtype=torch.bool)).long()
    reach = torch.eye(T, dtype=torch.long)
    for _ in range(layers):
        reach = (step @ reach).clamp(max=1)
    return reach > 0


@pytest.mark.parametrize(
    "check, wrong",
    [
        (check_flow_split, lambda w: split_tril(w.double())),
        (check_rollout, lambda ls: rollout_loop(tuple(w.double() for w in ls))),
        (check_two_layer_flow, lambda a, b: flow_broadcast(a.double(), b.double())),
        (check_reachability, lambda m, L: reach_loop(m, L).double()),
    ],
    ids=["flow_split", "rollout", "two_layer_flow", "reachability"],
)
def test_an_answer_in_another_dtype_is_told_the_rule_its_text_states(check, wrong):
    """Exercises 2-4 say "keep the input's dtype" (exercise 1: "return a bool tensor, like the
    mask"); the check names that rule, on the visible seed and on the hidden ones."""
    fails_on_seeds(check, wrong, seeds(check), "returned dtype", "keep the input's dtype")


def test_the_exercise_texts_state_the_dtype_rule_their_checks_enforce():
    text = (Path(__file__).parents[2] / "notebooks" / "05_information_flow.py").read_text()
    headers = text.split("### Exercise ")[1:]
    assert len(headers) == 4
    for header in headers:
        body = " ".join(line.lstrip("# ") for line in header.split("# %%")[0].splitlines())
        if body.startswith("1 "):
            assert "Return a bool" in body and "like the mask" in body, body
        else:
            assert "Keep the input's dtype" in body, body


# ------------------------------------------------------------------- every style, every seed

STYLES = [
    (check_reachability, reach_loop),
    (check_reachability, reach_matrix_power),
    (check_reachability, reach_sets),
    (check_reachability, reach_any),
    (check_reachability, reach_counts),
    (check_flow_split, split_where),
    (check_flow_split, split_tril),
    (check_flow_split, split_loops),
    (check_flow_split, split_total_minus),
    (check_flow_split, split_in_float64),
    (check_rollout, rollout_loop),
    (check_rollout, rollout_einsum),
    (check_rollout, rollout_reversed_list),
    (check_rollout, rollout_renormalised),
    (check_rollout, rollout_in_float64),
    (check_two_layer_flow, flow_broadcast),
    (check_two_layer_flow, flow_loops),
    (check_two_layer_flow, flow_columns),
    (check_two_layer_flow, flow_where),
    (check_two_layer_flow, flow_in_float64),
]


@pytest.mark.parametrize("check, answer", STYLES, ids=[a.__name__ for _, a in STYLES])
def test_every_correct_style_passes_the_visible_check_and_the_hidden_seeds(check, answer, capsys):
    passes_on_seeds(check, answer, seeds(check), capsys, cases=CHECKS[check][0])


def test_the_hidden_seeds_are_the_notebook_s():
    assert notebook_hidden_seeds("05_information_flow", exercises_ch05) == {
        check: seed for check, (_, seed) in CHECKS.items()
    }


def test_each_exercise_has_at_least_three_correct_styles():
    counts = styles_per_check(STYLES, CHECKS)
    assert len(counts) == 4 and min(counts.values()) >= 3, counts


@pytest.mark.parametrize("check", list(CHECKS), ids=lambda c: c.reference.__name__)
def test_an_unfinished_or_returnless_answer_says_so(check):
    fails_when_unfinished(check)
