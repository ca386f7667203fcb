"""Checks for the course's exercises: immediate, specific feedback.

Each ``check_*`` runs the learner's function on random and edge inputs, compares it with the
course's from-scratch reference, and raises ``AssertionError`` on the first failure with a message
that names the mistake ("missing 1/√d_k", "mask inverted: True means may attend", ...). Common
mistakes are recognised by computing them on purpose (softmax over the wrong axis, no scaling,
an inverted mask, ...) and seeing whether the learner's output equals one of them. On success a
check prints one line, ``✓ name: all N checks passed``, and returns ``None``.

A from-scratch exercise runs the learner's function inside ``attncourse.guard.forbidden_builtins``
(and a torch-function mode that also sees built-ins bound to other names, such as
``from torch import softmax``); calling the built-in, or the course's own implementation of the
same mechanism, fails the check.

``check_function`` is the generic engine the specific checks are written with; later chapters
use it for their own exercises::

    check_function(my_fn, reference_fn, [Case("a (3, 4) input", (torch.randn(3, 4),))],
                   diagnoses=[("forgot the square root", wrong_fn)])

Inputs come from a private ``torch.Generator``, so a check never moves the notebook's global
random stream; ``seed=`` gives hidden tests fresh inputs.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
from torch.overrides import TorchFunctionMode

from . import guard
from .attention import chunked as _chunked_module
from .attention import dot_product as _dot_product_module
from .attention import softmax as _softmax_function
from .metrics import attention_entropy as _entropy_function

# Bound once, at import: a later assignment to ``torch.allclose`` (or to the package's
# functions) cannot change how a check compares or what it compares against.
_Tensor = torch.Tensor
_allclose = torch.allclose
_isnan = torch.isnan
_isinf = torch.isinf
_isfinite = torch.isfinite
_equal = torch.equal
_where = torch.where
_softmax_ref = _softmax_function
_sdpa_ref = _dot_product_module.scaled_dot_product_attention
_entropy_ref = _entropy_function
_no_torch_function = getattr(torch._C, "DisableTorchFunction", contextlib.nullcontext)
_BuiltinCalledError = guard.BuiltinCalledError
_forbidden_builtins = guard.forbidden_builtins

_SOFTMAX_BUILTINS = frozenset(
    {"softmax", "log_softmax", "_softmax", "_log_softmax", "special_softmax", "special_log_softmax",
     "softmin", "gumbel_softmax"}
)
_ATTENTION_BUILTINS = _SOFTMAX_BUILTINS | frozenset(
    {"scaled_dot_product_attention", "_scaled_dot_product_attention_math", "multi_head_attention_forward"}
)


@dataclass
class Case:
    """One input to check a function on.

    ``label`` says what the input is ("scores of 1000"), for the failure message.
    ``hint``: what to tell the learner when this case gives a wrong result and no diagnosis
    explains it; a string, or ``hint(got, expected) -> str | None`` to choose by what came back.
    ``on_error``: what to tell the learner when the function raises on this case.
    """

    label: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    hint: str | Callable[[Any, Any], str | None] | None = None
    on_error: str | None = None


# ------------------------------------------------------------------------------------- engine


def _clone(value):
    if isinstance(value, _Tensor):
        return value.detach().clone()
    if isinstance(value, (tuple, list)):
        return type(value)(_clone(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


def _same_inputs(a, b) -> bool:
    if isinstance(a, _Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool(_equal(a, b) or (_isnan(a) & _isnan(b)).all())
    if isinstance(a, (tuple, list)):
        return all(_same_inputs(x, y) for x, y in zip(a, b))
    return True


def _describe(value) -> str:
    if isinstance(value, _Tensor):
        return f"shape {tuple(value.shape)}"
    return type(value).__name__


class _RefuseBuiltins(TorchFunctionMode):
    """Raise (and remember) a call to a forbidden torch function, however it was bound."""

    def __init__(self, names):
        super().__init__()
        self.names = names
        self.called = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in self.names:
            self.called.append(name)
            raise _BuiltinCalledError(
                f"{name} was called: this computes the result with PyTorch's built-in; "
                f"write it from plain tensor operations (exp, sum, matmul, ...) instead"
            )
        try:
            return func(*args, **(kwargs or {}))
        except _BuiltinCalledError:  # a built-in refused by the guard, reached through a bound name
            self.called.append(name)
            raise


def _refused_reference(*args, **kwargs):
    raise __import__("attncourse.guard", fromlist=["guard"]).BuiltinCalledError(
        "the course's own " + __import__("sys")._getframe().f_code.co_name + " (from attncourse) "
        "was called: this exercise asks you to write it yourself"
    )


class Refused:
    """While active, each of ``functions`` raises through ``replacement`` (a function that raises
    ``BuiltinCalledError`` naming itself): their code objects are swapped, so every reference to
    them, however imported, is covered. Functions with closures are left alone. ``functions`` is a
    list, or a dict {name the message gives: function}.
    """

    def __init__(self, functions, replacement=_refused_reference):
        pairs = functions.items() if isinstance(functions, dict) else ((f.__name__, f) for f in functions)
        unwrapped = ((name, inspect.unwrap(f)) for name, f in pairs)
        self.functions = {f: name for name, f in unwrapped if inspect.isfunction(f) and not f.__code__.co_freevars}
        self.replacement, self.saved = replacement, []

    def __enter__(self):
        for f, name in self.functions.items():
            self.saved.append((f, f.__code__))
            f.__code__ = self.replacement.__code__.replace(co_name=name, co_qualname=name)
        return self

    def __exit__(self, *exc):
        for f, code in reversed(self.saved):
            f.__code__ = code
        self.saved.clear()
        return False


_EXCEPTION_HINTS = [
    ("Dimension out of range", "use dim=-1 (the last dimension), so any number of leading dimensions works"),
    ("must match the size of tensor", "a reduction without keepdim=True drops the dimension it reduced; "
     "use keepdim=True so the result broadcasts back over the row"),
    ("mat1 and mat2 shapes cannot be multiplied", "check which tensor is transposed: q @ k.T is (T, S)"),
    ("expected scalar type", "mixing dtypes: keep the input's dtype (no .float() / .double())"),
]


def _call(fn, args, kwargs, name, label, on_error, from_scratch, builtin_names, references):
    __tracebackhide__ = True
    try:
        if from_scratch:
            mode = _RefuseBuiltins(builtin_names)
            with _forbidden_builtins(), Refused(references), mode:
                got = fn(*args, **kwargs)
            if mode.called:  # the learner caught the error we raised and carried on
                raise _BuiltinCalledError(f"{mode.called[0]} was called")
        else:
            got = fn(*args, **kwargs)
    except NotImplementedError:
        raise AssertionError(
            f"{name} is not implemented yet: replace `raise NotImplementedError()` with your code"
        ) from None
    except _BuiltinCalledError as e:
        raise AssertionError(f"{name} must be written from scratch, but {e}") from None
    except Exception as e:  # the learner's bug, reported as a failed check
        raised = f"{type(e).__name__}: {e}"
        if on_error:
            raise AssertionError(f"{name}: {on_error} ({label}; it raised {raised})") from None
        hint = next((h for key, h in _EXCEPTION_HINTS if key in str(e)), None)
        message = f"{name} raised {raised} ({label})"
        raise AssertionError(message + (f"\nhint: {hint}" if hint else "")) from None
    return got


def _problem(got, expected, names, order, atol, rtol) -> str | None:
    """What is wrong with ``got`` compared with ``expected`` (None if nothing).

    Compared with torch-function dispatch off: no tensor subclass or mode takes part.
    """
    with _no_torch_function():
        return _compare(got, expected, names, order, atol, rtol)


def _compare(got, expected, names, order, atol, rtol) -> str | None:
    if got is None:
        return "returned None: did you forget `return`?"
    if isinstance(expected, tuple):
        if not isinstance(got, (tuple, list)):
            return (f"returned {_describe(got)}, expected a tuple ({', '.join(names)}) of "
                    f"{len(expected)} tensors")
        if len(got) != len(expected):
            return f"returned {len(got)} values, expected {len(expected)} ({', '.join(names)})"
        for i in order or range(len(expected)):
            p = _compare(got[i], expected[i], (), (), atol, rtol)
            if p is not None:
                return f"{names[i]}: {p}" if names else p
        return None
    if not isinstance(got, _Tensor):
        return f"returned a {type(got).__name__}, expected a torch.Tensor"
    if type(got) is not _Tensor:
        return f"returned a {type(got).__name__} (a subclass of torch.Tensor): return a plain torch.Tensor"
    if got.shape != expected.shape:
        return f"returned shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if got.dtype != expected.dtype:
        return f"returned dtype {got.dtype}, expected {expected.dtype}: keep the input's dtype"
    got = got.detach()
    if _isnan(got).any():
        return "contains NaN"
    if _isinf(got).any():
        return "contains inf"
    if not _allclose(got, expected, atol=atol, rtol=rtol):
        diff = (got - expected).abs()
        flat, index = int(diff.argmax()), []
        for size in reversed(diff.shape):
            index.insert(0, flat % size)
            flat //= size
        index = tuple(index)
        return (f"wrong values: largest difference {float(diff.max()):.3g} at index {index} "
                f"(got {float(got[index]):.6g}, expected {float(expected[index]):.6g})")
    return None


def check_function(
    fn: Callable,
    reference: Callable,
    cases: Sequence[Case],
    name: str | None = None,
    *,
    diagnoses: Sequence[tuple[str, Callable]] = (),
    from_scratch: bool = False,
    builtins: frozenset = _SOFTMAX_BUILTINS,
    references: Sequence[Callable] = (),
    outputs: Sequence[str] = (),
    order: Sequence[int] = (),
    atol: float = 1e-5,
    rtol: float = 1e-4,
) -> None:
    """Check ``fn`` against ``reference`` on every case; raise ``AssertionError`` on the first failure.

    fn, reference: called as ``f(*case.args, **case.kwargs)`` (each gets its own copy of the inputs).
    name: the name in messages (default ``fn.__name__``).
    diagnoses: ``(message, wrong)`` pairs; when ``fn`` fails a case and its output equals
        ``wrong``'s output on that case (``wrong`` may return None to abstain), the message says
        which mistake it is. The first match wins, so list specific mistakes first.
    from_scratch: run ``fn`` inside ``forbidden_builtins()`` and refuse the torch functions named in
        ``builtins`` and the package functions in ``references``.
    outputs / order: names of a tuple result's elements ("output", "weights") and the order to
        compare them in (e.g. weights before output).
    """
    __tracebackhide__ = True  # IPython and pytest show the message, not this frame
    if not callable(fn):
        raise AssertionError(f"this check needs your function, got {type(fn).__name__}: pass the function itself")
    name = name or getattr(fn, "__name__", "your function")
    for number, case in enumerate(cases, 1):
        where = f"case {number} of {len(cases)}: {case.label}"
        expected = reference(*_clone(case.args), **_clone(case.kwargs))
        args, kwargs = _clone(case.args), _clone(case.kwargs)
        got = _call(fn, args, kwargs, name, where, case.on_error, from_scratch, builtins, references)
        if not _same_inputs(args, case.args):
            raise AssertionError(
                f"{name} changed its input in place ({where}), e.g. `x -= ...` or `x.exp_()`: "
                f"compute a new tensor instead (`x = x - ...`), the caller still needs its input"
            )
        problem = _problem(got, expected, outputs, order, atol, rtol)
        if problem is None:
            continue
        for message, wrong in diagnoses:
            try:
                wrong_result = wrong(*_clone(case.args), **_clone(case.kwargs))
            except Exception:
                continue
            if wrong_result is not None and _problem(got, wrong_result, outputs, order, atol, rtol) is None:
                raise AssertionError(f"{name}: {message} ({where})")
        hint = case.hint(got, expected) if callable(case.hint) else case.hint
        if hint:
            raise AssertionError(f"{name}: {hint} ({where}; {problem})")
        raise AssertionError(f"{name} {problem} ({where})")
    print(f"✓ {name}: all {len(cases)} checks passed")


# ------------------------------------------------------------------------------------- inputs


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(g, *shape, dtype=torch.float32, scale=1.0, shift=0.0):
    """Drawn in float64 from ``g`` whatever ``dtype`` is, so every dtype sees the same numbers."""
    return torch.randn(*shape, generator=g, dtype=torch.float64).mul(scale).add(shift).to(dtype)


def _t(rows, dtype=torch.float32):
    return torch.tensor(rows, dtype=dtype)


def _nonfinite(got) -> bool:
    tensors = got if isinstance(got, (tuple, list)) else (got,)
    return any(isinstance(t, _Tensor) and not bool(_isfinite(t.detach()).all()) for t in tensors)


# ------------------------------------------------------------------------------------ softmax

WRONG_AXIS = "weights sum over the wrong axis: normalise over the last dimension (keys)"
OVERFLOW = "overflow for scores of 1000: subtract the row max before exp"


def _softmax_without_keepdim(keep_max: bool, keep_sum: bool):
    def wrong(s):
        if s.dim() != 2 or s.shape[0] != s.shape[1]:
            return None  # only a square batch broadcasts silently
        e = torch.exp(s - s.amax(dim=-1, keepdim=keep_max))  # without keepdim: broadcast along the wrong axis
        return e / e.sum(dim=-1, keepdim=keep_sum)

    return wrong


KEEPDIM = ("a reduction without keepdim=True broadcast along the wrong axis: use "
           "s.amax(dim=-1, keepdim=True) and e.sum(dim=-1, keepdim=True)")


def check_softmax(fn: Callable, *, seed: int = 0) -> None:
    """fn(scores (..., n)) -> softmax over the last dimension, from scratch (Eq. 14.3.2).

    No softmax built-in (torch.softmax, F.softmax, Tensor.softmax, ..., nor attncourse's own).
    """
    __tracebackhide__ = True  # IPython and pytest show the message, not this frame
    g = _generator(seed)
    cases = [
        Case("a vector of 5 scores", (_randn(g, 5),)),
        Case("a (4, 4) batch of score rows", (_randn(g, 4, 4, scale=2.0),)),
        Case("a (4, 6) batch of score rows", (_randn(g, 4, 6),)),
        Case("a (2, 3, 5) tensor of scores", (_randn(g, 2, 3, 5),)),
        Case("float64 scores", (_randn(g, 3, 7, dtype=torch.float64),)),
        Case("equal scores (uniform weights)", (torch.zeros(2, 4),)),
        Case("a single key (n = 1)", (_randn(g, 3, 1),)),
        Case("scores of 1000", (_t([[1000.0, 999.0, 998.0], [1000.0, 1000.0, 1000.0]]),), hint=OVERFLOW + (
            " (softmax is unchanged by a shift, and exp(0) = 1 cannot overflow)")),
        Case("scores of -1000", (_t([[-1000.0, -1001.0, -1002.0]]),), hint=(
            "underflow for scores of -1000: every exp(s) is 0 and 0/0 is NaN; subtract the row max "
            "before exp (the largest score then gives exp(0) = 1)")),
        Case("a row of 1000 next to a row of -1000", (_t([[1000.0, 999.0, 998.0], [-1000.0, -999.0, -998.0]]),),
             hint="subtract each row's own max (s.amax(dim=-1, keepdim=True)), not the max of the whole tensor"),
    ]
    diagnoses = [
        (WRONG_AXIS, lambda s: _softmax_ref(s, dim=0) if s.dim() > 1 else None),
        (WRONG_AXIS, lambda s: _softmax_ref(s, dim=-2) if s.dim() > 2 else None),
        (KEEPDIM, _softmax_without_keepdim(False, True)),
        (KEEPDIM, _softmax_without_keepdim(True, False)),
        (KEEPDIM, _softmax_without_keepdim(False, False)),
        ("the weights do not sum to 1: divide exp(s) by its sum over the last dimension",
         lambda s: torch.exp(s)),
        ("the weights do not sum to 1: divide exp(s) by its sum over the last dimension",
         lambda s: torch.exp(s - s.amax(dim=-1, keepdim=True))),
        ("no exp: softmax is exp(s) / Σ exp(s), not s / Σ s", lambda s: s / s.sum(dim=-1, keepdim=True)),
    ]
    check_function(fn, _softmax_ref, cases, diagnoses=diagnoses, from_scratch=True,
                   builtins=_SOFTMAX_BUILTINS, references=[_softmax_ref])


# --------------------------------------------------------------------------- weighted average


def _weighted_average_ref(weights, values):
    """o = Σ_i α_i v_i for each query (Eq. 14.3.1): (T, S), (S, d) -> (T, d)."""
    return (weights.unsqueeze(-1) * values.unsqueeze(-3)).sum(dim=-2)  # (T, S, d) summed over S


def _dyadic_weights(g, T, S, dtype=torch.float32):
    """(T, S) weights whose rows sum to exactly 1 in floating point (powers of 2, shuffled)."""
    row = [2.0 ** -(i + 1) for i in range(S - 1)]
    row.append(row[-1] if row else 1.0)  # 1/2 + 1/4 + ... + 1/2^(S-1) + 1/2^(S-1) = 1
    rows = [[row[i] for i in torch.randperm(S, generator=g).tolist()] for _ in range(T)]
    return torch.tensor(rows, dtype=dtype)


def _softmax_rows_not_exactly_one(g):
    """Softmax weights whose row sums differ from 1 by a rounding error (valid weights all the same)."""
    while True:
        w = _softmax_ref(_randn(g, 6, 7, scale=3.0))
        if bool((w.sum(dim=-1) != 1).any()):
            return w


def check_weighted_average(fn: Callable, *, seed: int = 0) -> None:
    """fn(weights (T, S), values (S, d)) -> (T, d), o_t = Σ_i α_ti v_i   (Eq. 14.3.1).

    Also checks that valid weights are not rejected: rows that sum to 1 only up to rounding.
    """
    __tracebackhide__ = True  # IPython and pytest show the message, not this frame
    g = _generator(seed)
    eye = torch.eye(4)[[2, 0, 3]]  # (3, 4) one-hot rows: query t selects value 2, 0, 3
    cases = [
        Case("one query over 4 values", (_dyadic_weights(g, 1, 4), _randn(g, 4, 3))),
        Case("3 queries over 5 values of dimension 2", (_dyadic_weights(g, 3, 5), _randn(g, 5, 2))),
        Case("one-hot weights (each query selects one value)", (eye, _randn(g, 4, 3))),
        Case("uniform weights (the plain mean)", (torch.full((2, 4), 0.25), _randn(g, 4, 3))),
        Case("a single value (S = 1)", (torch.ones(2, 1), _randn(g, 1, 3))),
        Case("float64 inputs", (_dyadic_weights(g, 3, 4, torch.float64), _randn(g, 4, 6, dtype=torch.float64))),
        Case("valid softmax weights whose rows sum to 1 only up to rounding (e.g. 0.99999994)",
             (_softmax_rows_not_exactly_one(g), _randn(g, 7, 3)),
             on_error="valid weights were rejected: rows of softmax weights sum to 1 only up to "
                      "rounding, so compare float sums with torch.allclose, not =="),
    ]
    diagnoses = [
        ("divided by the number of values: the weights already sum to 1, so the average is "
         "Σ αᵢ vᵢ with no extra division", lambda w, v: _weighted_average_ref(w, v) / v.shape[0]),
        ("ignores the weights: it returns the plain mean of the values",
         lambda w, v: v.mean(dim=0, keepdim=True).expand(w.shape[0], -1)),
        ("the output is transposed: expected one row per query, shape (T, d)",
         lambda w, v: _weighted_average_ref(w, v).T),
    ]
    check_function(fn, _weighted_average_ref, cases, diagnoses=diagnoses)


# ------------------------------------------------------------------------------ scaled scores


def _scaled_scores_ref(q, k):
    """q kᵀ / √d_k   (Eq. 14.3.4): (T, d_k), (S, d_k) -> (T, S)."""
    return (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (T, S)


def check_scaled_scores(fn: Callable, *, seed: int = 0) -> None:
    """fn(q (T, d_k), k (S, d_k)) -> (T, S) = q kᵀ / √d_k   (Eq. 14.3.4)."""
    __tracebackhide__ = True  # IPython and pytest show the message, not this frame
    g = _generator(seed)
    cases = [
        Case("3 queries, 5 keys, d_k = 8", (_randn(g, 3, 8), _randn(g, 5, 8))),
        Case("4 queries, 4 keys, d_k = 16", (_randn(g, 4, 16), _randn(g, 4, 16))),
        Case("one query, 6 keys, d_k = 2", (_randn(g, 1, 2), _randn(g, 6, 2))),
        Case("float64, d_k = 64", (_randn(g, 2, 64, dtype=torch.float64), _randn(g, 3, 64, dtype=torch.float64))),
        Case("a zero query", (torch.zeros(1, 4), _randn(g, 3, 4))),
    ]
    d = lambda q: q.shape[-1]  # noqa: E731
    diagnoses = [
        ("missing 1/√d_k: divide q kᵀ by √d_k (Eq. 14.3.4)", lambda q, k: q @ k.T),
        ("divided by d_k instead of √d_k", lambda q, k: q @ k.T / d(q)),
        ("multiplied by √d_k instead of dividing by it", lambda q, k: q @ k.T * math.sqrt(d(q))),
        ("the scores are transposed: rows are queries and columns keys, so compute q @ k.T (T, S)",
         lambda q, k: _scaled_scores_ref(k, q)),
        ("scaled by the square root of the number of keys; d_k is the feature size, q.shape[-1]",
         lambda q, k: q @ k.T / math.sqrt(k.shape[0])),
        ("scaled by the square root of the number of queries; d_k is the feature size, q.shape[-1]",
         lambda q, k: q @ k.T / math.sqrt(q.shape[0])),
    ]
    check_function(fn, _scaled_scores_ref, cases, diagnoses=diagnoses)


# --------------------------------------------------------------------------- masked attention

MASK_INVERTED = "mask inverted: True means may attend"
EMPTY_ROW_NAN = "a query whose keys are all masked must get zero weights and zero output, not NaN"


def _empty_row_hint(got, expected):
    if _nonfinite(got):
        return EMPTY_ROW_NAN + " (when every score of a row is -inf, set that row's weights to 0)"
    return ("a query whose keys are all masked must get zero weights and zero output, not uniform "
            "weights (a finite fill such as -1e9 spreads the weight evenly): zero those rows")


def _attention_variant(q, k, v, mask, *, fill=None, scale=None, after=False, dim=-1):
    """A deliberately wrong masked attention, to recognise a learner's mistake."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., T, S)
    if after:
        w = _softmax_ref(scores) * mask  # masked after the softmax, not renormalised
    elif fill is not None:
        w = _softmax_ref(scores.masked_fill(~mask, fill), dim=dim)
    else:
        w = _softmax_ref(scores, dim=dim, mask=mask.expand_as(scores))
    return w @ v, w


def check_masked_attention(fn: Callable, *, seed: int = 0) -> None:
    """fn(q (..., T, d_k), k (..., S, d_k), v (..., S, d_v), mask (T, S) bool) -> (output, weights).

    softmax(q kᵀ/√d_k) v with masked keys removed (True = may attend); output (..., T, d_v),
    weights (..., T, S). A query whose keys are all masked gets zero weights and a zero output.
    From scratch: no softmax built-in, no F.scaled_dot_product_attention (nor attncourse's own).
    """
    __tracebackhide__ = True  # IPython and pytest show the message, not this frame
    g = _generator(seed)
    causal = torch.ones(4, 4).tril().bool()  # (T, S) query i sees keys j <= i
    padded = torch.tensor([[True, True, True, False, False]] * 3)  # (3, 5) the last two keys are padding
    random = torch.rand(4, 6, generator=g) < 0.6  # (4, 6)
    random[:, 0] = True  # every query keeps at least one key
    empty = torch.tensor([[True, False, True], [False, False, False], [False, True, True]])  # query 1 sees nothing
    cases = [
        Case("3 queries, 5 keys (two of them padding), d_v = 2",
             (_randn(g, 3, 6), _randn(g, 5, 6), _randn(g, 5, 2), padded)),
        Case("4 queries, 4 keys, causal mask", (_randn(g, 4, 8), _randn(g, 4, 8), _randn(g, 4, 8), causal)),
        Case("a batch (2, 3 heads) of 4 queries and 6 keys, random mask",
             (_randn(g, 2, 3, 4, 8), _randn(g, 2, 3, 6, 8), _randn(g, 2, 3, 6, 5), random)),
        Case("an all-True mask", (_randn(g, 3, 4), _randn(g, 3, 4), _randn(g, 3, 4), torch.ones(3, 3, dtype=torch.bool))),
        Case("float64 inputs", (_randn(g, 4, 8, dtype=torch.float64), _randn(g, 4, 8, dtype=torch.float64),
                                _randn(g, 4, 3, dtype=torch.float64), causal)),
        Case("scores of about ±1000", (_randn(g, 4, 16, scale=30.0), _randn(g, 4, 16, scale=30.0),
                                       _randn(g, 4, 3), causal), hint=OVERFLOW),
        Case("a query whose keys are all masked", (_randn(g, 3, 4), _randn(g, 3, 4), _randn(g, 3, 2), empty),
             hint=_empty_row_hint),
    ]

    def reference(q, k, v, mask):
        return _sdpa_ref(q, k, v, mask)

    diagnoses = [
        (MASK_INVERTED, lambda q, k, v, m: _sdpa_ref(q, k, v, ~m)),
        ("missing 1/√d_k: divide q kᵀ by √d_k (Eq. 14.3.4)", lambda q, k, v, m: _sdpa_ref(q, k, v, m, scale=1.0)),
        ("divided by d_k instead of √d_k", lambda q, k, v, m: _sdpa_ref(q, k, v, m, scale=1 / q.shape[-1])),
        (WRONG_AXIS, lambda q, k, v, m: _attention_variant(q, k, v, m, dim=-2)),
        ("masked scores were set to 0, which still gets weight: fill them with float('-inf') before the softmax",
         lambda q, k, v, m: _attention_variant(q, k, v, m, fill=0.0)),
        ("masked keys were zeroed after the softmax, so the weights no longer sum to 1: fill masked "
         "scores with float('-inf') before the softmax", lambda q, k, v, m: _attention_variant(q, k, v, m, after=True)),
    ]
    check_function(fn, reference, cases, diagnoses=diagnoses, from_scratch=True,
                   builtins=_ATTENTION_BUILTINS,
                   references=[_softmax_ref, _sdpa_ref, _dot_product_module.grouped_query_attention,
                               _chunked_module.chunked_attention],
                   outputs=("output", "weights"), order=(1, 0))


# ------------------------------------------------------------------------------------ entropy

LOG_OF_ZERO = "log of 0 gives NaN: treat 0·log 0 as 0"


def check_entropy(fn: Callable, *, seed: int = 0) -> None:
    """fn(weights (..., n)) -> (...) entropy H = -Σ p log p in nats, with 0·log 0 = 0 (Eq. 14.3.3)."""
    __tracebackhide__ = True  # IPython and pytest show the message, not this frame
    g = _generator(seed)
    zero_hint = LOG_OF_ZERO + " (e.g. torch.where(p > 0, p * torch.log(p), 0.0))"
    cases = [
        Case("uniform weights over 4 keys (H = log 4)", (torch.full((4,), 0.25),)),
        Case("3 rows of softmax weights over 5 keys", (_softmax_ref(_randn(g, 3, 5)),)),
        Case("a (2, 3, 6) batch of weights", (_softmax_ref(_randn(g, 2, 3, 6, scale=2.0)),)),
        Case("float64 weights", (_softmax_ref(_randn(g, 2, 4, dtype=torch.float64)),)),
        Case("one-hot weights (H = 0)", (_t([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),), hint=zero_hint),
        Case("weights with a masked (zero) key", (_t([[0.5, 0.0, 0.25, 0.25]]),), hint=zero_hint),
        Case("a single key (n = 1, H = 0)", (torch.ones(3, 1),)),
    ]

    def plogp(p):
        return _where(p > 0, p * torch.log(_where(p > 0, p, torch.ones_like(p))), torch.zeros_like(p))

    diagnoses = [
        ("used log2: entropy in nats uses the natural log (torch.log)", lambda p: _entropy_ref(p) / math.log(2)),
        ("used log10: entropy in nats uses the natural log (torch.log)", lambda p: _entropy_ref(p) / math.log(10)),
        ("the sign is flipped: H = -Σ p log p, which is ≥ 0", lambda p: -_entropy_ref(p)),
        ("summed over the wrong axis: sum -p log p over the last dimension (the keys)",
         lambda p: -plogp(p).sum(dim=0) if p.dim() > 1 else None),
        ("returned -p log p for each key: sum it over the last dimension", lambda p: -plogp(p)),
        ("averaged -p log p over the keys: entropy is the sum, not the mean", lambda p: -plogp(p).mean(dim=-1)),
    ]
    check_function(fn, _entropy_ref, cases, diagnoses=diagnoses, from_scratch=True, builtins=frozenset(),
                   references=[_entropy_ref])


__all__ = [
    "Case",
    "check_entropy",
    "check_function",
    "check_masked_attention",
    "check_scaled_scores",
    "check_softmax",
    "check_weighted_average",
]
