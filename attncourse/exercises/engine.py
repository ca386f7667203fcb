"""The check engine behind every exercise: immediate, specific feedback.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from .. import guard

# Bound once, at import: a later assignment to ``torch.allclose`` (or to the package's
# functions) cannot change how a check compares or what it compares against.
_Tensor = torch.Tensor
_allclose = torch.allclose
_isnan = torch.isnan
_isinf = torch.isinf
_isfinite = torch.isfinite
_equal = torch.equal
_no_torch_function = getattr(torch._C, "DisableTorchFunction", contextlib.nullcontext)
_BuiltinCalledError = guard.BuiltinCalledError
_forbidden_builtins = guard.forbidden_builtins

SOFTMAX_BUILTINS = frozenset(
    {
        "softmax",
        "log_softmax",
        "_softmax",
        "_log_softmax",
        "special_softmax",
        "special_log_softmax",
        "softmin",
        "gumbel_softmax",
    }
)
ATTENTION_BUILTINS = SOFTMAX_BUILTINS | frozenset(
    {
        "scaled_dot_product_attention",
        "_scaled_dot_product_attention_math",
        "multi_head_attention_forward",
    }
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
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and bool(_equal(a, b) or (_isnan(a) & _isnan(b)).all())
        )
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
        pairs = (
            functions.items()
            if isinstance(functions, dict)
            else ((f.__name__, f) for f in functions)
        )
        unwrapped = ((name, inspect.unwrap(f)) for name, f in pairs)
        self.functions = {
            f: name for name, f in unwrapped if inspect.isfunction(f) and not f.__code__.co_freevars
        }
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
    (
        "Dimension out of range",
        "use dim=-1 (the last dimension), so any number of leading dimensions works",
    ),
    (
        "must match the size of tensor",
        "a reduction without keepdim=True drops the dimension it reduced; "
        "use keepdim=True so the result broadcasts back over the row",
    ),
    (
        "mat1 and mat2 shapes cannot be multiplied",
        "check which tensor is transposed: q @ k.T is (T, S)",
    ),
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
            return (
                f"returned {_describe(got)}, expected a tuple ({', '.join(names)}) of "
                f"{len(expected)} tensors"
            )
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
        return (
            f"returned a {type(got).__name__} (a subclass of torch.Tensor): "
            "return a plain torch.Tensor"
        )
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
        return (
            f"wrong values: largest difference {float(diff.max()):.3g} at index {index} "
            f"(got {float(got[index]):.6g}, expected {float(expected[index]):.6g})"
        )
    return None


def check_function(
    fn: Callable,
    reference: Callable,
    cases: Sequence[Case],
    name: str | None = None,
    *,
    diagnoses: Sequence[tuple[str, Callable]] = (),
    from_scratch: bool = False,
    builtins: frozenset = SOFTMAX_BUILTINS,
    references: Sequence[Callable] = (),
    outputs: Sequence[str] = (),
    order: Sequence[int] = (),
    atol: float = 1e-5,
    rtol: float = 1e-4,
) -> None:
    """Check ``fn`` against ``reference`` on every case; raise ``AssertionError`` on the first
    failure.

    fn, reference: called as ``f(*case.args, **case.kwargs)`` (each gets its own copy of the
        inputs).
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
        raise AssertionError(
            f"this check needs your function, got {type(fn).__name__}: pass the function itself"
        )
    name = name or getattr(fn, "__name__", "your function")
    for number, case in enumerate(cases, 1):
        where = f"case {number} of {len(cases)}: {case.label}"
        expected = reference(*_clone(case.args), **_clone(case.kwargs))
        args, kwargs = _clone(case.args), _clone(case.kwargs)
        got = _call(
            fn, args, kwargs, name, where, case.on_error, from_scratch, builtins, references
        )
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
            if (
                wrong_result is not None
                and _problem(got, wrong_result, outputs, order, atol, rtol) is None
            ):
                raise AssertionError(f"{name}: {message} ({where})")
        hint = case.hint(got, expected) if callable(case.hint) else case.hint
        if hint:
            raise AssertionError(f"{name}: {hint} ({where}; {problem})")
        raise AssertionError(f"{name} {problem} ({where})")
    print(f"✓ {name}: all {len(cases)} checks passed")


# ------------------------------------------------------------------------------------- inputs


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(g, *shape, dtype=torch.float32, scale=1.0, shift=0.0):
    """Drawn in float64 from ``g`` whatever ``dtype`` is, so every dtype sees the same numbers."""
    return torch.randn(*shape, generator=g, dtype=torch.float64).mul(scale).add(shift).to(dtype)


def as_tensor(rows, dtype=torch.float32):
    return torch.tensor(rows, dtype=dtype)


def nonfinite(got) -> bool:
    tensors = got if isinstance(got, (tuple, list)) else (got,)
    return any(isinstance(t, _Tensor) and not bool(_isfinite(t.detach()).all()) for t in tensors)


__all__ = [
    "ATTENTION_BUILTINS",
    "SOFTMAX_BUILTINS",
    "Case",
    "Refused",
    "as_tensor",
    "check_function",
    "generator",
    "nonfinite",
    "randn",
]
