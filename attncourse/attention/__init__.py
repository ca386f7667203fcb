"""Attention mechanisms, each written from plain tensor operations."""

from .alignment import AdditiveAttention, LuongAttention
from .chunked import chunked_attention
from .dot_product import grouped_query_attention, scaled_dot_product_attention
from .gated import GatedAttention, OutputGatedAttention
from .linear import linear_attention
from .multihead import MultiHeadAttention
from .softmax import softmax
from .sparse import (
    LearnableSparseMask,
    annealed_temperature,
    block_attention,
    gumbel_sigmoid,
    local_attention,
    soft_masked_attention,
    strided_attention,
)

__all__ = [
    "AdditiveAttention",
    "GatedAttention",
    "LearnableSparseMask",
    "LuongAttention",
    "MultiHeadAttention",
    "OutputGatedAttention",
    "annealed_temperature",
    "block_attention",
    "chunked_attention",
    "grouped_query_attention",
    "gumbel_sigmoid",
    "linear_attention",
    "local_attention",
    "scaled_dot_product_attention",
    "soft_masked_attention",
    "softmax",
    "strided_attention",
]
