"""Catch calls to the PyTorch built-ins that the course re-implements from scratch.

Inside ``with forbidden_builtins():`` each of them raises ``BuiltinCalledError``, so a test
(or an exercise check) can prove that a mechanism computes its result by itself.
"""

import contextlib

import torch
import torch.nn.functional as F
from torch import nn

# (owner, attribute, what the learner should write instead)
_FUNCTIONS = [
    (torch, "softmax", "softmax"),
    (torch, "log_softmax", "softmax"),
    (torch.special, "softmax", "softmax"),
    (torch.Tensor, "softmax", "softmax"),
    (torch.Tensor, "log_softmax", "softmax"),
    (F, "softmax", "softmax"),
    (F, "log_softmax", "softmax"),
    (F, "cross_entropy", "cross-entropy"),
    (F, "nll_loss", "cross-entropy"),
    (F, "scaled_dot_product_attention", "scaled dot-product attention"),
    (F, "multi_head_attention_forward", "multi-head attention"),
    (F, "layer_norm", "LayerNorm"),
    (torch, "layer_norm", "LayerNorm"),
    (F, "rms_norm", "RMSNorm"),
    (torch, "rms_norm", "RMSNorm"),
    (F, "batch_norm", "BatchNorm"),
    (torch, "batch_norm", "BatchNorm"),
]
_MODULES = [
    (nn.MultiheadAttention, "multi-head attention"),
    (nn.CrossEntropyLoss, "cross-entropy"),
    (nn.NLLLoss, "cross-entropy"),
    (nn.LayerNorm, "LayerNorm"),
    (nn.RMSNorm, "RMSNorm"),
    (nn.BatchNorm1d, "BatchNorm"),
    (nn.BatchNorm2d, "BatchNorm"),
    (nn.BatchNorm3d, "BatchNorm"),
    (nn.Transformer, "a Transformer"),
    (nn.TransformerEncoderLayer, "a Transformer block"),
    (nn.TransformerDecoderLayer, "a Transformer block"),
    (nn.TransformerEncoder, "a Transformer stack"),
    (nn.TransformerDecoder, "a Transformer stack"),
]


class BuiltinCalledError(RuntimeError):
    """Raised when code under ``forbidden_builtins`` calls a built-in it should re-implement."""


def _refuse(qualname: str, concept: str):
    def refuse(*args, **kwargs):
        raise BuiltinCalledError(
            f"{qualname} was called: this computes {concept} with PyTorch's built-in; "
            f"write it from plain tensor operations (exp, sum, matmul, mean, ...) instead"
        )

    return refuse


@contextlib.contextmanager
def forbidden_builtins():
    """Make every built-in of the course's from-scratch list raise while the block runs."""
    saved = []
    try:
        for owner, name, concept in _FUNCTIONS:
            saved.append((owner, name, getattr(owner, name)))
            setattr(
                owner,
                name,
                _refuse(f"{getattr(owner, '__name__', 'torch.Tensor')}.{name}", concept),
            )
        for cls, concept in _MODULES:
            saved.append((cls, "forward", cls.forward))
            cls.forward = _refuse(f"nn.{cls.__name__}", concept)
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)
