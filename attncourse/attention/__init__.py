"""Attention mechanisms, each written from plain tensor operations."""

from .dot_product import grouped_query_attention, scaled_dot_product_attention
from .multihead import MultiHeadAttention
from .softmax import softmax

__all__ = [
    "MultiHeadAttention",
    "grouped_query_attention",
    "scaled_dot_product_attention",
    "softmax",
]
