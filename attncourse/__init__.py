"""attncourse: every attention and normalization mechanism of the course, from scratch.

Submodules: ``attention`` (softmax, scaled dot-product, multi-head/GQA, additive, Luong, gated,
linear, chunked), ``masks``, ``positional``, ``norms``, ``blocks``, ``rnn`` and ``guard``.
"""

from . import attention, blocks, guard, masks, norms, positional, rnn

__version__ = "0.1.0"
__all__ = ["attention", "blocks", "guard", "masks", "norms", "positional", "rnn"]
