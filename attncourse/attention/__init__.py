"""Attention mechanisms, each written from plain tensor operations."""

from .alignment import AdditiveAttention, LuongAttention
from .chunked import chunked_attention
from .dot_product import grouped_query_attention, scaled_dot_product_attention
from .gated import GatedAttention
from .linear import linear_attention
from .multihead import MultiHeadAttention
from .softmax import softmax

__all__ = [
    "AdditiveAttention",
    "GatedAttention",
    "LuongAttention",
    "MultiHeadAttention",
    "chunked_attention",
    "grouped_query_attention",
    "linear_attention",
    "scaled_dot_product_attention",
    "softmax",
]
