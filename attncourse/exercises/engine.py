"""The check engine behind every exercise: immediate, specific feedback, and a grade it predicts.

An exercise is declared once, as an ``Exercise``: the course's reference answer, the inputs to try
(``cases(generator)``: random and edge inputs drawn from a private ``torch.Generator``, so a check
never moves the notebook's random stream and another seed gives fresh numbers of the same kinds),
the common mistakes it recognises (``diagnoses``: wrong answers computed on purpose; when the
learner's output equals one, the message names the mistake: "missing 1/√d_k", "mask inverted"),
and, for a from-scratch exercise, the concepts it re-implements (``reimplements``, names of
``attncourse.guard.CONCEPTS``). Calling it checks a learner's function::

    check_softmax = Exercise(softmax, softmax_cases, diagnoses=[...], reimplements=("softmax",))
    check_softmax(my_softmax)            # ✓ my_softmax: all 10 checks passed, or AssertionError
    check_softmax(my_softmax, seed=11)   # the hidden tests: the same kinds of input, other numbers

A check refuses an answer that breaks the rule for answers before anything else: it reads the
answer's cell as the grader does (``attncourse.exercises.scan``: what the exercise re-implements,
the course's package, private names, lookups by name, imports outside a short list; the same
words as the grader's) and runs it under
``attncourse.guard.refusing``, so neither ``torch.softmax`` under another name nor the course's own
``softmax`` (nor anything built on it) passes. Then it compares, case by case, with one tolerance
rule: a few units of the output dtype's precision at the inputs' magnitude (``tolerance``), so every
correct formulation passes and "✓ passed" predicts the hidden tests. The first failure raises
``AssertionError`` with the case, what was expected and the likely cause.

A grader that must not run the learner's code in its own process uses the same declaration:
``inputs(seed)`` gives the cases, and ``judge(case, got)`` the verdict on an answer computed
elsewhere. ``check_function`` checks against a reference and a list of cases without a
declaration, for a quick check of one's own.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import json
import linecache
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .. import guard
from ..i18n import say
from . import scan as _scan

# Bound once, at import: a later assignment to ``torch.allclose`` (or to the package's
# functions) cannot change how a check compares or what it compares against.
_Tensor = torch.Tensor
_isnan = torch.isnan
_isinf = torch.isinf
_isfinite = torch.isfinite
_equal = torch.equal
_no_torch_function = getattr(torch._C, "DisableTorchFunction", contextlib.nullcontext)
_BuiltinCalledError = guard.BuiltinCalledError

SOFTMAX_BUILTINS = ("softmax",)  # concepts, for check_function's ``builtins``
ATTENTION_BUILTINS = ("attention",)
PRECISION = 64  # a tolerance of this many units of the dtype's precision at the inputs' magnitude


class Label(str):
    """A case's label with numbers drawn at run time: ``Label("offset {k}, dim 8", k=3)`` is the
    English text "offset 3, dim 8" (a ``str``), and ``label_text`` says it in the learner's
    language, the template translated and the same numbers filled in."""

    def __new__(cls, template: str, **fields):
        label = super().__new__(cls, template.format(**fields) if fields else template)
        label.template, label.fields = template, fields
        return label

    def __reduce__(self):
        return (_label, (self.template, self.fields))


def _label(template: str, fields: dict) -> Label:
    return Label(template, **fields)


def label_text(label: str) -> str:
    """A case's label in the learner's language (``Label``: its numbers filled in)."""
    if isinstance(label, Label):
        return say(label.template, **label.fields)
    return say(label)


@dataclass
class Case:
    """One input to check a function on.

    ``label`` says what the input is ("scores of 1000"), for the failure message: a plain string,
    or a ``Label`` when it holds numbers drawn at run time (both translated by ``say``).
    ``hint``: what to tell the learner when this case gives a wrong result and no diagnosis
    explains it; a string, or ``hint(got, expected) -> str | None`` to choose by what came back
    (said in the learner's language by the function itself, ``attncourse.i18n.say``; its
    ``texts`` attribute, or its module's ``SENTENCES``, lists what it can say).
    ``on_error``: what to tell the learner when the function raises on this case.
    ``diagnoses``: mistakes recognised on this case besides the exercise's own (set when the
    cases' builder returns them).
    """

    label: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    hint: str | Callable[[Any, Any], str | None] | None = None
    on_error: str | None = None
    diagnoses: Sequence[tuple[str, Callable]] = ()


# ----------------------------------------------------------------------------------- values


def _clone(value):
    if isinstance(value, _Tensor):
        return value.detach().clone()
    if isinstance(value, tuple | list):
        return type(value)(_clone(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


def _same_inputs(a, b) -> bool:
    if isinstance(a, _Tensor):
        return (
            isinstance(b, _Tensor)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and bool(_equal(a, b) or (_isnan(a) & _isnan(b)).all())
        )
    if isinstance(a, tuple | list):
        return all(_same_inputs(x, y) for x, y in zip(a, b))
    return True


A_TENSOR = "a {dtype} tensor of shape {shape}"
A_SEQUENCE = "a {kind} of {count}"


def _describe(value) -> str:
    if isinstance(value, _Tensor):
        return say(A_TENSOR, dtype=value.dtype, shape=tuple(value.shape))
    if isinstance(value, tuple | list):
        return say(A_SEQUENCE, kind=type(value).__name__, count=len(value))
    return (
        f"{type(value).__name__} {value!r}"
        if isinstance(value, int | float)
        else (type(value).__name__)
    )


def describe_inputs(case: Case) -> str:
    """The case's arguments in words: shapes and dtypes, numbers as they are."""
    parts = [_describe(a) for a in case.args] + [
        f"{k}={_describe(v)}" for k, v in case.kwargs.items()
    ]
    return ", ".join(parts)


def _magnitude(value) -> float:
    """The largest |number| in a (nested) value of tensors and numbers."""
    if isinstance(value, _Tensor):
        if not value.is_floating_point() or value.numel() == 0:
            return 0.0
        finite = value.detach()[_isfinite(value.detach())]
        return float(finite.abs().max()) if finite.numel() else 0.0
    if isinstance(value, tuple | list):
        return max((_magnitude(v) for v in value), default=0.0)
    if isinstance(value, dict):
        return max((_magnitude(v) for v in value.values()), default=0.0)
    if isinstance(value, float | int) and not isinstance(value, bool):
        return abs(float(value)) if math.isfinite(value) else 0.0
    return 0.0


def tolerance(dtype: torch.dtype, scale: float, expected, precision: float = PRECISION):
    """(atol, rtol) for comparing an answer of ``dtype`` with ``expected``: ``precision`` units of
    the dtype's spacing at the inputs' magnitude ``scale`` (at least 1), relative to each value and
    absolute at the output's own magnitude. A float32 answer to scores of 1000 may differ from
    the reference by about 1000 × 1.2e-7 relative, whatever correct formula it uses."""
    rtol = precision * torch.finfo(dtype).eps * max(1.0, scale)
    return rtol * max(1.0, _magnitude(expected)), rtol


# --------------------------------------------------------------------------------- comparing


def _differing(got: float, expected: float) -> tuple[str, str]:
    """``got`` and ``expected`` with as many digits as it takes to tell them apart (6 or more)."""
    for digits in range(6, 18):
        a, b = f"{got:.{digits}g}", f"{expected:.{digits}g}"
        if a != b:
            break
    return a, b


# what ``_compare`` finds (translated by ``say``; ``{...}``: filled in)
RETURNED_NONE = "returned None: did you forget `return`?"
NOT_A_TUPLE = "returned {got}, expected a tuple ({names}) of {count} tensors"
TUPLE_LENGTH = "returned {got} values, expected {count} ({names})"
NOT_A_TENSOR = "returned {got}, expected a torch.Tensor"
A_SUBCLASS = "returned a {type} (a subclass of torch.Tensor): return a plain torch.Tensor"
WRONG_SHAPE = "returned shape {got}, expected {expected}"
WRONG_DTYPE = "returned dtype {got}, expected {expected}"  # an output whose dtype is set
KEEP_DTYPE = "returned dtype {got}, expected {expected}: keep the input's dtype"
WRONG_ENTRIES = "wrong values: {wrong} of {total} entries differ"
CONTAINS_NAN = "contains NaN"
CONTAINS_INF = "contains inf"
LARGEST_DIFFERENCE = (
    "wrong values: largest difference {difference} at index {index} (got {got}, expected "
    "{expected}; allowed {allowed})"
)
NOT_A_NUMBER = "returned something that is not a number ({error})"
HINTED = "{hint} ({problem})"  # a case's hint, and the difference it explains


def _dtypes(value) -> set:
    """The dtypes of the tensors in a (nested) value."""
    if isinstance(value, _Tensor):
        return {value.dtype}
    if isinstance(value, tuple | list):
        return set().union(*map(_dtypes, value))
    if isinstance(value, dict):
        return set().union(*map(_dtypes, value.values()))
    return set()


def _compare(
    got, expected, names, order, scale, precision, slack=0.0, input_dtypes=frozenset()
) -> str | None:
    if got is None:
        return say(RETURNED_NONE)
    if isinstance(expected, tuple):
        if not isinstance(got, tuple | list):
            return say(NOT_A_TUPLE, got=_describe(got), names=", ".join(names), count=len(expected))
        if len(got) != len(expected):
            return say(TUPLE_LENGTH, got=len(got), count=len(expected), names=", ".join(names))
        for i in order or range(len(expected)):
            p = _compare(got[i], expected[i], (), (), scale, precision, slack, input_dtypes)
            if p is not None:
                return f"{names[i]}: {p}" if names else p
        return None
    if not isinstance(got, _Tensor):
        return say(NOT_A_TENSOR, got=_describe(got))
    if type(got) is not _Tensor:
        return say(A_SUBCLASS, type=type(got).__name__)
    if got.shape != expected.shape:
        return say(WRONG_SHAPE, got=tuple(got.shape), expected=tuple(expected.shape))
    if got.dtype != expected.dtype:
        template = KEEP_DTYPE if expected.dtype in input_dtypes else WRONG_DTYPE
        return say(template, got=got.dtype, expected=expected.dtype)
    got = got.detach()
    if not expected.is_floating_point():
        if _equal(got, expected):
            return None
        wrong = int((got != expected).sum())
        return say(WRONG_ENTRIES, wrong=wrong, total=got.numel())
    bad_nan = _isnan(got) & ~_isnan(expected)
    if bad_nan.any():
        return say(CONTAINS_NAN)
    if (_isinf(got) & (got != expected)).any():
        return say(CONTAINS_INF)
    atol, rtol = tolerance(expected.dtype, scale, expected, precision)
    both_nan = _isnan(got) & _isnan(expected)
    diff = torch.where(both_nan | (got == expected), 0.0, (got - expected).abs())
    allowed = atol + slack + rtol * expected.abs()
    if (diff > allowed).any():
        excess = torch.where(diff > allowed, diff, 0.0)
        index = tuple(int(i) for i in torch.unravel_index(excess.argmax(), diff.shape))
        shown, wanted = _differing(float(got[index]), float(expected[index]))
        return say(
            LARGEST_DIFFERENCE,
            difference=f"{float(diff.max()):.3g}",
            index=index,
            got=shown,
            expected=wanted,
            allowed=f"{float(allowed[index]):.2g}",
        )
    return None


# ----------------------------------------------------------------------------------- calling


# the engine's sentences, translated by ``attncourse.i18n.say`` (``{...}``: filled in)
NOT_IMPLEMENTED = (
    "{name} is not implemented yet: replace `raise NotImplementedError()` with your code"
)
CALLED_BUILTIN = "{name} must be written from scratch, but {error}"
FROM_SCRATCH = "{name} must be written from scratch: {problem}"
IN_HELPER = "in {helper}, which it calls, {problem}"
NOT_A_FUNCTION = "this check needs your function, got {type}: pass the function itself"
WHERE = "case {number} of {total}: {label}"
IN_PLACE = (
    "{name} changed its input in place ({where}), e.g. `x -= ...` or `x.exp_()`: compute a new "
    "tensor instead (`x = x - ...`), the caller still needs its input"
)
WRONG = "{name}: {problem}\n  ({where}; inputs: {inputs})"
PASSED = "✓ {name}: all {count} checks passed"
ON_ERROR = "{name}: {note} ({where}; it raised {raised})"
RAISED = "{name} raised {raised} ({where})"
HINT = "hint: {hint}"
YOUR_FUNCTION = "your function"

_EXCEPTION_HINTS = [
    (
        "Dimension out of range",
        "use dim=-1 (the last dimension), so any number of leading dimensions works",
    ),
    (
        "must match the size of tensor",
        "two shapes do not broadcast: a reduction without keepdim=True drops the dimension it "
        "reduced (use keepdim=True), or a (C,) parameter needs reshaping to line up with its axis",
    ),
    ("mat1 and mat2 shapes cannot be multiplied", "check which tensor is transposed"),
    ("expected scalar type", "mixing dtypes: keep the input's dtype (no .float() / .double())"),
    (
        "to have the same dtype",
        "mixing dtypes: make new tensors in the input's dtype, e.g. torch.eye(d, dtype=x.dtype)",
    ),
    (
        "must be real number, not Tensor",
        "math functions take Python numbers: use the torch version (torch.cos, torch.exp, ...)",
    ),
    (
        "only one element tensors can be converted",
        "a tensor with several entries was used as a number: use the torch version of the "
        "function (torch.cos, torch.log, ...) instead of math's, or index the entry you meant",
    ),
    ("is not defined", "a name your function uses is not defined: define it or import it"),
    ("unexpected keyword argument", "the function's parameters must be the ones the text gives"),
    ("positional argument", "the function's parameters must be the ones the text gives"),
]


SENTENCES = (
    NOT_IMPLEMENTED,
    CALLED_BUILTIN,
    FROM_SCRATCH,
    IN_HELPER,
    NOT_A_FUNCTION,
    WHERE,
    IN_PLACE,
    WRONG,
    PASSED,
    ON_ERROR,
    RAISED,
    HINT,
    YOUR_FUNCTION,
    A_TENSOR,
    A_SEQUENCE,
    RETURNED_NONE,
    NOT_A_TUPLE,
    TUPLE_LENGTH,
    NOT_A_TENSOR,
    A_SUBCLASS,
    WRONG_SHAPE,
    WRONG_DTYPE,
    KEEP_DTYPE,
    WRONG_ENTRIES,
    CONTAINS_NAN,
    CONTAINS_INF,
    LARGEST_DIFFERENCE,
    NOT_A_NUMBER,
    HINTED,
    *(hint for _, hint in _EXCEPTION_HINTS),
)


def messages_of(exercise: Exercise) -> list[str]:
    """The fixed texts a check of ``exercise`` can say: its named mistakes, and its cases'
    labels (a ``Label``'s template), named mistakes, hints and error notes (those of seed 0;
    other seeds say the same). What a hint function says is its ``texts`` (a hint made for a
    case) or its module's ``SENTENCES``."""
    texts = [message for message, _ in exercise.diagnoses]
    for case in exercise.inputs(0):
        texts.append(getattr(case.label, "template", case.label))
        texts += [message for message, _ in case.diagnoses]
        texts += [t for t in (case.hint, case.on_error) if isinstance(t, str)]
        texts += [t for t in getattr(case.hint, "texts", ()) if t]  # a hint function's
    return texts


def _error_message(name: str, error: Exception | str, where: str, on_error: str | None) -> str:
    """What to tell the learner whose function raised ``error`` (an exception, or its text as
    "Type: message"): ``on_error`` if the case has one, else a hint chosen from the error."""
    raised = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    if on_error:
        return say(ON_ERROR, name=name, note=say(on_error), where=where, raised=raised)
    hint = error_hint(raised)
    message = say(RAISED, name=name, raised=raised, where=where)
    return message + ("\n" + say(HINT, hint=hint) if hint else "")


def error_hint(raised: str) -> str | None:
    """A hint chosen from what an error says, or None."""
    return next((say(h) for key, h in _EXCEPTION_HINTS if key in raised), None)


def _own_source(fn) -> str | None:
    """``fn``'s source on its own: a def as written, a lambda cut out of the lines around it."""
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    source = inspect.cleandoc("\n" + source) if source[:1].isspace() else source
    if fn.__name__ != "<lambda>":
        return source
    arguments = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])
    try:
        tree = _scan.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lambdas = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Lambda) and [a.arg for a in node.args.args] == arguments
    ]
    return ast.unparse(lambdas[0]) if len(lambdas) == 1 else None


_KERNEL_CELL = re.compile(r"(^<ipython-input-\d+-)|([/\\]ipykernel_\d+[/\\][^/\\]+\.py$)")


def _cell_source(fn) -> str | None:
    """The whole notebook cell ``fn`` was defined in, when it was (IPython keeps each cell's
    code under a file name of its own): what the grader reads as the answer cell."""
    filename = getattr(getattr(fn, "__code__", None), "co_filename", "")
    if not _KERNEL_CELL.search(filename):
        return None
    lines = linecache.getlines(filename)
    return "".join(lines) if lines else None


def _learner_sources(fn, seen=None, cells=None, helper=None):
    """(source, namespace, helper) of ``fn`` and of the learner's own functions it calls by
    name: the whole cell for a function defined in a notebook (read as the grader reads the
    answer cell, with the same line numbers), else the function's own source; ``helper`` is
    None for ``fn``'s own, else the name it calls."""
    seen = set() if seen is None else seen
    cells = set() if cells is None else cells
    fn = inspect.unwrap(fn)
    if not inspect.isfunction(fn) or fn in seen:
        return
    seen.add(fn)
    cell = _cell_source(fn)
    if cell is not None:
        if cell not in cells:
            cells.add(cell)
            yield cell, fn.__globals__, helper
    else:
        source = _own_source(fn)
        if source is not None:
            yield source, fn.__globals__, helper
    for name in fn.__code__.co_names:
        other = fn.__globals__.get(name)
        if inspect.isfunction(other) and other.__module__ == fn.__module__:
            yield from _learner_sources(other, seen, cells, helper or name)


@functools.cache
def chapter_names(module: str) -> frozenset[str]:
    """What the own cells of the chapter whose checks are in ``module``
    (``attncourse.exercises.chNN``) define (``scan.notebook_names``), read from its notebook in
    the course's notebook folder; empty for any other module or where the notebook is missing."""
    from ..classroom.notebooks import DEFAULT_SOURCE

    number = re.fullmatch(r"attncourse\.exercises\.ch(\d\d)", module or "")
    paths = sorted(DEFAULT_SOURCE.glob(f"{number[1]}_*.ipynb")) if number else []
    if not paths:
        return frozenset()
    cells = json.loads(paths[0].read_text(encoding="utf-8")).get("cells", [])
    return _scan.notebook_names(cells)


def in_helper(problem: str, helper: str | None) -> str:
    """A problem found in a function the answer calls (``helper``), said as such."""
    return problem if helper is None else say(IN_HELPER, helper=helper, problem=problem)


def from_scratch_message(name: str, problem: str) -> str:
    """What the visible check and the grader say when reading an answer finds ``problem`` (a
    phrase of ``attncourse.exercises.scan``: "line N uses ...: the rule")."""
    return say(FROM_SCRATCH, name=name, problem=problem)


# ----------------------------------------------------------------------------------- Exercise


class CheckFailed(AssertionError):
    """A failed check. In a notebook IPython shows its message alone, not a traceback into this
    module (``_render_traceback_``); nbval, pytest and nbgrader still see a failed cell."""

    def _render_traceback_(self) -> list[str]:
        return [
            f"\x1b[1;31m✗\x1b[0m {line}" if i == 0 else line
            for i, line in enumerate(str(self).splitlines() or ["check failed"])
        ]


class Exercise:
    """A graded exercise's check, declared once (see the module docstring).

    reference: the course's answer, called as ``reference(*case.args, **case.kwargs)``.
    cases: ``cases(generator) -> list[Case]``, the inputs for one seed (or ``(cases, diagnoses)``,
        when the diagnoses are made with the cases' own helpers).
    diagnoses: ``(message, wrong)`` pairs; ``wrong`` computes a mistake on a case's inputs (or
        returns None to abstain); the first whose output the answer matches names the mistake.
    reimplements: concepts (``attncourse.guard.CONCEPTS``) the answer must compute by itself;
        the reference and ``refuse`` (course functions) are refused too, and so is every call
        into the course's package that the answer's source makes.
    outputs / order: names of a tuple answer's parts and the order to compare them in.
    convert: applied to the answer before comparing (e.g. a float into a float64 tensor).
    scale: ``scale(*args, **kwargs) -> float``, the inputs' magnitude for the tolerance (default:
        the largest |number| among the inputs); precision: the tolerance in units of precision.
    slack: ``slack(*args, **kwargs) -> float``, an absolute allowance on top of the tolerance, for
        an exercise whose text allows a stated approximation (an ε-guarded log).
    """

    def __init__(
        self,
        reference: Callable,
        cases: Callable[[torch.Generator], list[Case]],
        *,
        name: str | None = None,
        diagnoses: Sequence[tuple[str, Callable]] = (),
        reimplements: Sequence[str] = (),
        refuse: Sequence[Callable] = (),
        outputs: Sequence[str] = (),
        order: Sequence[int] = (),
        convert: Callable | None = None,
        scale: Callable | None = None,
        precision: float = PRECISION,
        slack: Callable | None = None,
    ):
        self.reference, self.cases, self.name = reference, cases, name
        self.module = sys._getframe(1).f_globals.get("__name__", "")  # chNN's: its chapter
        self.diagnoses, self.reimplements = list(diagnoses), tuple(reimplements)
        for concept in self.reimplements:
            if concept not in guard.CONCEPTS:
                raise ValueError(f"unknown concept {concept!r}: one of {sorted(guard.CONCEPTS)}")
        self.refuse = [f for f in [reference, *refuse] if inspect.isfunction(inspect.unwrap(f))]
        self.outputs, self.order, self.convert = tuple(outputs), tuple(order), convert
        self.scale, self.precision, self.slack = scale, precision, slack
        self.__doc__ = getattr(reference, "__doc__", None)

    # the inputs and the verdict (what a grader outside the learner's process uses) ----------
    def inputs(self, seed: int = 0) -> list[Case]:
        """The cases of one seed: the same kinds of input for every seed, other numbers."""
        built = self.cases(torch.Generator().manual_seed(seed))
        if isinstance(built, tuple):
            cases, diagnoses = built
            for case in cases:
                case.diagnoses = [*case.diagnoses, *diagnoses]
            return cases
        return built

    def expected(self, case: Case):
        return self.reference(*_clone(case.args), **_clone(case.kwargs))

    def judge(self, case: Case, got, expected=None) -> str | None:
        """What is wrong with ``got`` as the answer to ``case`` (None if nothing): the mistake's
        name when a diagnosis recognises it, else the case's hint, else the difference."""
        verdict = self.verdict(case, got, expected)
        return None if verdict is None else verdict[1]

    def verdict(self, case: Case, got, expected=None) -> tuple[str, str] | None:
        """None if ``got`` is right, else (kind, message): kind "diagnosis" (a named mistake),
        "hint" (the case's hint, with the difference) or "difference" (the difference only)."""
        expected = self.expected(case) if expected is None else expected
        if self.convert is not None and got is not None:
            try:
                got = self.convert(got)
            except Exception as error:
                return "difference", say(NOT_A_NUMBER, error=type(error).__name__)
        scale = (
            self.scale(*case.args, **case.kwargs)
            if self.scale
            else max(_magnitude(case.args), _magnitude(case.kwargs))
        )
        slack = self.slack(*case.args, **case.kwargs) if self.slack else 0.0
        with _no_torch_function():
            dtypes = _dtypes((case.args, case.kwargs))  # "keep the dtype" only when one came in
            problem = _compare(
                got, expected, self.outputs, self.order, scale, self.precision, slack, dtypes
            )
            if problem is None:
                return None
            for message, wrong in [*self.diagnoses, *case.diagnoses]:
                try:
                    wrong_result = wrong(*_clone(case.args), **_clone(case.kwargs))
                except Exception:
                    continue
                if wrong_result is None or _compare(
                    got, wrong_result, self.outputs, self.order, scale, self.precision, slack
                ):
                    continue
                # a mistake that gives the right answer on this case cannot be named by it
                if _compare(
                    wrong_result, expected, self.outputs, self.order, scale, self.precision, slack
                ):
                    return "diagnosis", say(message)
        # a hint function says its own words (in the learner's language); a fixed hint is said here
        if callable(case.hint):
            try:
                hint = case.hint(got, expected)
            except Exception:  # a hint that cannot read this answer (a short tuple) says nothing
                hint = None
        else:
            hint = say(case.hint) if case.hint else None
        if hint:
            return "hint", say(HINTED, hint=hint, problem=problem)
        return "difference", problem

    # the check in the notebook -----------------------------------------------------------
    def static_problems(self, fn) -> list[str]:
        """What reading the answer's source (and its own helpers') finds against the rule for
        answers (``attncourse.exercises.scan``, the grader's own reading): what the exercise
        re-implements, the course's package, a private name, an import or module answers may
        not use, a lookup that hides what is called, or in a notebook (whose whole cell is read)
        a name the chapter's own cells define, which the grader does not run."""
        problems = []
        in_notebook = _cell_source(inspect.unwrap(fn)) is not None
        notebook = chapter_names(self.module) if in_notebook else ()
        for source, namespace, helper in _learner_sources(fn):
            found = _scan.scan(source, self.reimplements, namespace=namespace, notebook=notebook)
            problems += [in_helper(problem, helper) for problem in found]
        return problems

    def run(self, fn, case: Case, name: str, where: str):
        """Call ``fn`` on a copy of the case's inputs, refusing what the exercise re-implements
        (and its reference); returns (answer, inputs after the call) or raises
        ``AssertionError``."""
        __tracebackhide__ = True
        args, kwargs = _clone(case.args), _clone(case.kwargs)
        try:
            with guard.refusing(self.reimplements, self.refuse) as refusal:
                got = fn(*args, **kwargs)
            if refusal.called:  # the learner caught the error we raised and carried on
                raise _BuiltinCalledError(refusal.called[0])
        except NotImplementedError:
            raise AssertionError(say(NOT_IMPLEMENTED, name=name)) from None
        except _BuiltinCalledError as error:
            raise AssertionError(say(CALLED_BUILTIN, name=name, error=error)) from None
        except Exception as error:  # the learner's bug, reported as a failed check
            raise AssertionError(_error_message(name, error, where, case.on_error)) from None
        return got, (args, kwargs)

    def __call__(self, fn: Callable, *, seed: int = 0) -> None:
        """Check ``fn`` on every case of ``seed``; raise ``CheckFailed`` (an ``AssertionError``)
        at the first failure, print one ✓ line when all pass."""
        __tracebackhide__ = True  # pytest shows the message, not this frame
        try:
            self._check(fn, seed)
        except CheckFailed:
            raise
        except AssertionError as failure:
            raise CheckFailed(*failure.args) from None

    def _check(self, fn: Callable, seed: int) -> None:
        __tracebackhide__ = True
        if not callable(fn):
            raise AssertionError(say(NOT_A_FUNCTION, type=type(fn).__name__))
        name = self.name or getattr(fn, "__name__", None) or say(YOUR_FUNCTION)
        problems = self.static_problems(fn)
        if problems:
            raise AssertionError(from_scratch_message(name, problems[0]))
        cases = self.inputs(seed)
        for number, case in enumerate(cases, 1):
            where = say(WHERE, number=number, total=len(cases), label=label_text(case.label))
            expected = self.expected(case)
            got, (args, kwargs) = self.run(fn, case, name, where)
            if not _same_inputs((args, kwargs), (case.args, case.kwargs)):
                raise AssertionError(say(IN_PLACE, name=name, where=where))
            problem = self.judge(case, got, expected)
            if problem is not None:
                raise AssertionError(
                    say(
                        WRONG, name=name, problem=problem, where=where, inputs=describe_inputs(case)
                    )
                )
        print(say(PASSED, name=name, count=len(cases)))


def check_function(
    fn: Callable,
    reference: Callable,
    cases: Sequence[Case],
    name: str | None = None,
    *,
    diagnoses: Sequence[tuple[str, Callable]] = (),
    from_scratch: bool = False,
    builtins: Sequence[str] = SOFTMAX_BUILTINS,
    references: Sequence[Callable] = (),
    outputs: Sequence[str] = (),
    order: Sequence[int] = (),
    precision: float = PRECISION,
    atol: float | None = None,  # older checks' fixed tolerances: the one rule replaces them
    rtol: float | None = None,
) -> None:
    """Check ``fn`` against ``reference`` on ``cases`` (a list), as an ``Exercise`` would:
    ``from_scratch`` refuses the concepts ``builtins`` and the course functions ``references``."""
    __tracebackhide__ = True
    exercise = Exercise(
        reference,
        lambda generator: list(cases),
        name=name,
        diagnoses=diagnoses,
        reimplements=tuple(builtins) if from_scratch else (),
        outputs=outputs,
        order=order,
        precision=precision,
    )
    exercise.refuse = list(references) if from_scratch else []  # the reference may be anyone's
    exercise(fn)


# ------------------------------------------------------------------------------------- inputs


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(g, *shape, dtype=torch.float32, scale=1.0, shift=0.0):
    """Drawn in float64 from ``g`` whatever ``dtype`` is, so every dtype sees the same numbers."""
    return torch.randn(*shape, generator=g, dtype=torch.float64).mul(scale).add(shift).to(dtype)


def as_tensor(rows, dtype=torch.float32):
    return torch.tensor(rows, dtype=dtype)


def nonfinite(got) -> bool:
    tensors = got if isinstance(got, tuple | list) else (got,)
    return any(isinstance(t, _Tensor) and not bool(_isfinite(t.detach()).all()) for t in tensors)


def float32_close(got, expected) -> bool:
    """Is ``got`` right to float32's precision (about 7 digits) though wrong at float64's: part of
    a float64 answer computed in float32, or an ε added where the exercise allows none?"""
    if not isinstance(got, _Tensor) or not isinstance(expected, _Tensor):
        return False
    if got.shape != expected.shape or got.dtype != expected.dtype or not got.is_floating_point():
        return False
    got, expected = got.detach(), expected.detach()
    if not bool(_isfinite(got).all()) or not bool(_isfinite(expected).all()):
        return False
    return bool(((got - expected).abs() <= 1e-5 * expected.abs().clamp(min=1.0)).all())


def float32_hint(text: str, **fields) -> Callable:
    """A case's hint that says ``text`` (its ``fields`` filled in) to an answer that is
    ``float32_close`` to the right one, and nothing to any other."""

    def hint(got, expected):
        return say(text, **fields) if float32_close(got, expected) else None

    hint.texts = (text,)
    return hint


class Refused(guard.Refusal):
    """While active, each of ``functions`` (plain course functions) raises when called, however
    it was imported; a dict {name the message gives: function} is accepted too."""

    def __init__(self, functions, replacement=None):  # replacement: kept for old callers
        super().__init__({}, functions.values() if isinstance(functions, dict) else functions)


__all__ = [
    "ATTENTION_BUILTINS",
    "PRECISION",
    "SOFTMAX_BUILTINS",
    "Case",
    "CheckFailed",
    "Exercise",
    "Label",
    "Refused",
    "as_tensor",
    "check_function",
    "describe_inputs",
    "float32_close",
    "generator",
    "label_text",
    "nonfinite",
    "randn",
    "tolerance",
]
