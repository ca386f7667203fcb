"""Refuse the built-ins (and course functions) that a from-scratch computation must not call.

Each *concept* the course re-implements lists what computes it already: PyTorch's functions and
modules, and the package's own implementation. ``refusing(concepts)`` makes every one of them
raise ``BuiltinCalledError`` while a block runs, however it is reached:

* plain Python functions (``F.softmax``, ``torch.autograd.grad``, ``attncourse.attention.softmax``)
  have their code swapped, so every name bound to them is covered (``from torch.nn.functional
  import softmax as s``);
* C built-ins (``torch.softmax``, ``Tensor.softmax``) are refused by name in a torch-function
  mode, which sees them under any alias;
* modules (``nn.LayerNorm``) have their ``forward`` refused.

``forbidden_builtins()`` refuses PyTorch's built-ins of every mechanism concept (not the course's
own functions, which build on each other): inside it a test proves that a mechanism computes its
result by itself. Exercise checks use ``refusing`` with the concepts an exercise declares.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from dataclasses import dataclass

from torch.overrides import TorchFunctionMode

from .i18n import say


class BuiltinCalledError(RuntimeError):
    """Raised when code under ``refusing`` calls something it should compute by itself."""


@dataclass(frozen=True)
class Concept:
    """What computes ``description`` already: torch callables and modules, and course functions,
    as qualified names (``"torch.nn.functional.softmax"``, ``"attncourse.norms.LayerNorm"``);
    ``packages``: whole torch modules every public name of which computes it, or helps to
    (``torch.distributions``), refused by the reading of an answer (``attncourse.exercises.scan``),
    not at run time."""

    description: str
    torch: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    course: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()


_SOFTMAX_TORCH = (
    "torch.softmax",
    "torch.log_softmax",
    "torch.special.softmax",
    "torch.special.log_softmax",
    "torch.Tensor.softmax",
    "torch.Tensor.log_softmax",
    "torch.nn.functional.softmax",
    "torch.nn.functional.log_softmax",
    "torch.nn.functional.softmin",
    "torch.nn.functional.gumbel_softmax",
    "torch.nn.functional.cross_entropy",
    "torch.masked.softmax",
    "torch.masked.log_softmax",
    "torch.masked.softmin",
    "torch.sparse.softmax",
    "torch.sparse.log_softmax",
    # attention normalises its scores with a softmax: with an identity value it is one
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward",
)
_SOFTMAX_COURSE = (
    "attncourse.attention.softmax.softmax",
    "attncourse.attention.softmax.softmax_",
    "attncourse.losses.log_softmax",
    "attncourse.losses.cross_entropy",
)
_TRANSFORMER_MODULES = (
    "torch.nn.MultiheadAttention",
    "torch.nn.Transformer",
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerDecoderLayer",
    "torch.nn.TransformerEncoder",
    "torch.nn.TransformerDecoder",
)

_SOFTMAX_MODULES = (
    "torch.nn.Softmax",
    "torch.nn.LogSoftmax",
    "torch.nn.Softmin",
    "torch.nn.Softmax2d",
    "torch.nn.CrossEntropyLoss",
    "torch.nn.AdaptiveLogSoftmaxWithLoss",
    *_TRANSFORMER_MODULES,
)
# distributions normalise their logits (Categorical(logits=s).probs is a softmax) and compute
# entropies; torch.nn.attention holds further attention kernels (flex_attention)
_SOFTMAX_PACKAGES = ("torch.distributions", "torch.nn.attention")

CONCEPTS = {
    "softmax": Concept(
        "a softmax",
        _SOFTMAX_TORCH,
        _SOFTMAX_MODULES,
        _SOFTMAX_COURSE,
        _SOFTMAX_PACKAGES,
    ),
    "attention": Concept(
        "attention",
        _SOFTMAX_TORCH,
        _SOFTMAX_MODULES,
        (
            *_SOFTMAX_COURSE,
            "attncourse.attention.dot_product.scaled_dot_product_attention",
            "attncourse.attention.dot_product.grouped_query_attention",
            "attncourse.attention.chunked.chunked_attention",
            "attncourse.attention.multihead.MultiHeadAttention.forward",
        ),
        _SOFTMAX_PACKAGES,
    ),
    "layer_norm": Concept(
        "LayerNorm",
        (
            "torch.nn.functional.layer_norm",
            "torch.layer_norm",
            "torch.native_layer_norm",
            "torch.nn.functional.group_norm",
            "torch.group_norm",
        ),
        ("torch.nn.LayerNorm", "torch.nn.GroupNorm"),
        ("attncourse.norms.LayerNorm.forward",),
    ),
    "rms_norm": Concept(
        "RMSNorm",
        ("torch.nn.functional.rms_norm", "torch.rms_norm"),
        ("torch.nn.RMSNorm",),
        ("attncourse.norms.RMSNorm.forward",),
    ),
    "batch_norm": Concept(
        "BatchNorm",
        (
            "torch.nn.functional.batch_norm",
            "torch.batch_norm",
            "torch.native_batch_norm",
            "torch.nn.functional.instance_norm",
            "torch.instance_norm",
        ),
        ("torch.nn.BatchNorm1d", "torch.nn.BatchNorm2d", "torch.nn.BatchNorm3d"),
        ("attncourse.norms.BatchNorm1d.forward",),
    ),
    "entropy": Concept(
        "an entropy",
        (  # -p log p itself, and the losses that sum it (H(p) is the cross-entropy of p with p)
            "torch.special.entr",
            "torch.nn.functional.cross_entropy",
            "torch.nn.functional.kl_div",
            "torch.nn.functional.binary_cross_entropy",
        ),
        ("torch.nn.CrossEntropyLoss", "torch.nn.KLDivLoss", "torch.nn.BCELoss"),
        (
            "attncourse.metrics.attention_entropy",
            "attncourse.metrics.normalized_entropy",
            "attncourse.metrics.entropy",
            "attncourse.metrics.mutual_information",
        ),
        ("torch.distributions",),  # every distribution's .entropy()
    ),
    "autograd": Concept(
        "a derivative by automatic differentiation",
        (
            "torch.autograd.grad",
            "torch.autograd.backward",
            "torch.Tensor.backward",
            "torch.autograd.functional.jacobian",
            "torch.autograd.functional.vjp",
            "torch.autograd.functional.jvp",
            "torch.autograd.functional.hessian",
            "torch.func.jacrev",
            "torch.func.jacfwd",
            "torch.func.vjp",
            "torch.func.jvp",
            "torch.func.grad",
            "torch.Tensor.grad_fn",  # calling a tensor's grad_fn runs its backward
        ),
        (),
        (),
        # forward-mode AD, torch.func's transforms, the autograd graph's nodes and the
        # numerical and analytical Jacobians of gradcheck
        (
            "torch.func",
            "torch.autograd.forward_ad",
            "torch.autograd.functional",
            "torch.autograd.gradcheck",
            "torch.autograd.graph",
        ),
    ),
    "gradient_clipping": Concept(
        "gradient clipping",
        (
            "torch.nn.utils.clip_grad_norm_",
            "torch.nn.utils.clip_grad_value_",
            "torch.nn.utils.get_total_norm",
            "torch.nn.utils.clip_grads_with_norm_",
        ),
    ),
}
MECHANISM_CONCEPTS = ("softmax", "attention", "layer_norm", "rms_norm", "batch_norm")


def resolve(qualified: str):
    """The object a qualified name stands for (``"torch.nn.LayerNorm.forward"``), or None."""
    parts = qualified.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:]:
                obj = getattr(obj, part)
        except AttributeError:
            return None
        return obj
    return None


# the refusal, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in)
REFUSED = (
    "{what} was called: it computes {description} already; write it from plain tensor "
    "operations (exp, sum, matmul, mean, ...) instead"
)
TORCH_S = "torch's {name}"
THE_ANSWER = "the answer (the course's own)"
SENTENCES = (REFUSED, TORCH_S, THE_ANSWER, *(c.description for c in CONCEPTS.values()))


def _refuse_message(what: str, description: str) -> str:
    return say(REFUSED, what=what, description=say(description))


_CALLS: list[str] = []  # what swapped functions refused, newest last


def _refused(*args, **kwargs):
    """The code a refused Python function runs instead of its own, in that function's module:
    its code object's name is the message."""
    guard = __import__("attncourse.guard", fromlist=["guard"])
    message = __import__("sys")._getframe().f_code.co_name
    guard._CALLS.append(message)
    raise guard.BuiltinCalledError(message)


class _RefuseByName(TorchFunctionMode):
    """Refuse torch functions by name, however they were bound (``from torch import softmax``)."""

    def __init__(self, names: dict[str, str]):
        super().__init__()
        self.names, self.called = names, []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in self.names:
            message = _refuse_message(say(TORCH_S, name=name), self.names[name])
            self.called.append(message)
            raise BuiltinCalledError(message)
        return func(*args, **(kwargs or {}))


class Refusal:
    """The context ``refusing`` returns: ``called`` lists the refusals' messages (even when the
    code under it caught the error and went on)."""

    def __init__(self, targets: dict[str, str], functions=()):
        self.swapped: dict = {}  # function -> (message, description)
        self.by_name: dict[str, str] = {}  # torch function name -> description
        self.patched: list = []  # (owner, attribute, refusing function)
        for qualified, description in targets.items():
            self._add(qualified, resolve(qualified), description)
        for f in functions:
            self._add(f"{f.__module__}.{f.__qualname__}", f, THE_ANSWER)
        self.saved, self.mode, self.calls, self.start = [], None, [], 0

    def _add(self, qualified, obj, description):
        if obj is None:
            return
        if inspect.isclass(obj):  # a module: refuse its forward
            self._add(f"{qualified}.forward", obj.forward, description)
            return
        f = inspect.unwrap(obj)
        if inspect.isfunction(f) and not f.__code__.co_freevars:
            self.swapped[f] = (qualified, description)
        name = getattr(obj, "__name__", qualified.rsplit(".", 1)[-1])
        if qualified.startswith("torch"):
            self.by_name[name] = description
            owner, attribute = resolve(qualified.rsplit(".", 1)[0]), qualified.rsplit(".", 1)[1]
            if owner is not None and not inspect.isclass(owner):
                self.patched.append((owner, attribute, _raiser(qualified, description, self)))

    @property
    def called(self) -> list[str]:
        return self.calls + _CALLS[self.start :] + (self.mode.called if self.mode else [])

    def __enter__(self):
        self.start = len(_CALLS)
        for f, (qualified, description) in self.swapped.items():
            self.saved.append((f, f.__code__))
            message = _refuse_message(qualified, description)
            f.__code__ = _refused.__code__.replace(co_name=message, co_qualname=message)
        for owner, attribute, raiser in self.patched:
            self.saved.append((owner, attribute, getattr(owner, attribute)))
            setattr(owner, attribute, raiser)
        self.mode = _RefuseByName(self.by_name)
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)
        for entry in reversed(self.saved):
            if len(entry) == 2:
                entry[0].__code__ = entry[1]
            else:
                setattr(*entry)
        self.saved.clear()
        return False


def _raiser(qualified: str, description: str, refusal: Refusal):
    message = _refuse_message(qualified, description)

    def refuse(*args, **kwargs):
        refusal.calls.append(message)
        raise BuiltinCalledError(message)

    return refuse


def targets(concepts, *, course: bool = True) -> dict[str, str]:
    """{qualified name: what it computes} for the concepts (``course=False``: torch only)."""
    found = {}
    for name in concepts:
        concept = CONCEPTS[name]
        names = concept.torch + concept.modules + (concept.course if course else ())
        for qualified in names:
            found.setdefault(qualified, concept.description)  # the first concept names it
    return found


def packages(concepts) -> dict[str, str]:
    """{torch module: what it computes}: whole modules refused for the concepts."""
    found = {}
    for name in concepts:
        for package in CONCEPTS[name].packages:
            found.setdefault(package, CONCEPTS[name].description)
    return found


def refusing(concepts=(), functions=(), *, course: bool = True) -> Refusal:
    """While active, everything that computes one of ``concepts`` (names of ``CONCEPTS``), and the
    ``functions`` given, raises ``BuiltinCalledError``."""
    return Refusal(targets(concepts, course=course), functions)


@contextlib.contextmanager
def forbidden_builtins():
    """PyTorch's built-ins for every mechanism concept raise while the block runs."""
    with refusing(MECHANISM_CONCEPTS, course=False):
        yield
