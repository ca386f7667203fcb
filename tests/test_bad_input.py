"""Bad input raises ValueError naming what was expected and what was given."""

import pytest
import torch

from attncourse.attention import (
    MultiHeadAttention,
    grouped_query_attention,
    scaled_dot_product_attention,
    softmax,
)
from attncourse.attention.alignment import AdditiveAttention, LuongAttention
from attncourse.attention.chunked import chunked_attention
from attncourse.attention.linear import linear_attention
from attncourse.blocks import Highway, MultiScaleHighway, TransformerBlock
from attncourse.norms import BatchNorm1d, LayerNorm, RMSNorm
from attncourse.positional import RotaryEmbedding, sinusoidal_encoding
from attncourse.rnn import VanillaRNN

x = torch.randn
q, k, v = x(2, 3, 5, 8), x(2, 3, 7, 8), x(2, 3, 7, 4)

CASES = {
    # name: (call, regex the message must match — expected and got both named)
    "sdpa d_k mismatch": (
        lambda: scaled_dot_product_attention(q, x(2, 3, 7, 6), v),
        r"d_k=8.*d_k=6",
    ),
    "sdpa key/value lengths": (
        lambda: scaled_dot_product_attention(q, k, x(2, 3, 6, 4)),
        r"same number of keys S.*7.*6",
    ),
    "sdpa mask does not broadcast": (
        lambda: scaled_dot_product_attention(q, k, v, torch.ones(4, 7, dtype=torch.bool)),
        r"\(4, 7\).*\(2, 3, 5, 7\)",
    ),
    "sdpa integer mask": (
        lambda: scaled_dot_product_attention(q, k, v, torch.ones(5, 7, dtype=torch.int64)),
        r"bool.*float.*int64",
    ),
    "sdpa integer tensors": (
        lambda: scaled_dot_product_attention(q.long(), k.long(), v.long()),
        r"floating-point.*int64",
    ),
    "sdpa rank 1": (
        lambda: scaled_dot_product_attention(x(8), x(8), x(8)),
        r"at least 2-D.*\(8,\)",
    ),
    "sdpa batch clash": (
        lambda: scaled_dot_product_attention(q, x(4, 3, 7, 8), x(4, 3, 7, 4)),
        r"do not broadcast.*\(2, 3\).*\(4, 3\)",
    ),
    "sdpa mixed dtypes": (
        lambda: scaled_dot_product_attention(q, k.double(), v),
        r"float32.*float64",
    ),
    "softmax zero temperature": (
        lambda: softmax(x(3), temperature=0.0),
        r"temperature must be > 0, got 0.0",
    ),
    "softmax integer input": (lambda: softmax(torch.arange(3)), r"floating-point.*int64"),
    "gqa heads not a multiple": (
        lambda: grouped_query_attention(x(1, 6, 3, 4), x(1, 4, 3, 4), x(1, 4, 3, 4)),
        r"\(6\).*\(4\)",
    ),
    "mha d_model not divisible": (
        lambda: MultiHeadAttention(10, 3),
        r"d_model \(10\).*num_heads \(3\)",
    ),
    "mha kv heads not dividing": (
        lambda: MultiHeadAttention(12, 4, num_kv_heads=3),
        r"num_heads \(4\).*num_kv_heads \(3\)",
    ),
    "mha wrong feature size": (
        lambda: MultiHeadAttention(12, 3)(x(2, 5, 10)),
        r"feature size 10.*expected 12",
    ),
    "mha wrong rank": (lambda: MultiHeadAttention(12, 3)(x(5, 12)), r"3-D.*\(5, 12\)"),
    "mha key/value lengths": (
        lambda: MultiHeadAttention(12, 3)(x(2, 5, 12), x(2, 6, 12), x(2, 4, 12)),
        r"\(2, 6, 12\).*\(2, 4, 12\)",
    ),
    "mha integer input": (
        lambda: MultiHeadAttention(12, 3)(torch.ones(2, 5, 12, dtype=torch.long)),
        r"floating-point",
    ),
    "additive wrong query size": (
        lambda: AdditiveAttention(4, 6, 8)(x(2, 5), x(2, 3, 6)),
        r"feature size 5.*expected 4",
    ),
    "alignment batch clash": (
        lambda: AdditiveAttention(4, 6, 8)(x(3, 4), x(2, 3, 6)),
        r"batch size B, got 3 and 2",
    ),
    "luong dot needs equal sizes": (
        lambda: LuongAttention(4, 6, score="dot"),
        r"query_dim == key_dim.*4 and 6",
    ),
    "luong unknown score": (lambda: LuongAttention(4, score="cosine"), r"one of.*'cosine'"),
    "chunked chunk size 0": (lambda: chunked_attention(q, k, v, chunk_size=0), r"chunk_size.*0"),
    "chunked d_k mismatch": (lambda: chunked_attention(q, x(2, 3, 7, 6), v), r"d_k"),
    "linear key/value lengths": (lambda: linear_attention(q, k, x(2, 3, 6, 4)), r"7.*6"),
    "layernorm wrong size": (lambda: LayerNorm(8)(x(2, 6)), r"\(8,\).*\(6,\)"),
    "layernorm integer input": (
        lambda: LayerNorm(3)(torch.ones(2, 3, dtype=torch.int32)),
        r"floating-point.*int32",
    ),
    "rmsnorm wrong size": (lambda: RMSNorm((4, 5))(x(2, 4, 6)), r"\(4, 5\).*\(4, 6\)"),
    "batchnorm wrong channels": (lambda: BatchNorm1d(4)(x(8, 5)), r"4.*5"),
    "batchnorm wrong rank": (lambda: BatchNorm1d(4)(x(2, 4, 3, 3)), r"\(2, 4, 3, 3\)"),
    "batchnorm batch of one": (lambda: BatchNorm1d(4)(x(1, 4)), r"more than one value"),
    "block unknown norm": (lambda: TransformerBlock(8, 2, norm="middle"), r"'middle'"),
    "deepnorm without depth": (lambda: TransformerBlock(8, 2, norm="deepnorm"), r"num_layers"),
    "highway wrong size": (lambda: Highway(4)(x(2, 5)), r"feature size 5.*expected 4"),
    "multiscale even kernel": (lambda: MultiScaleHighway(4, kernel_sizes=(1, 2)), r"odd.*\(1, 2\)"),
    "rope odd dim": (lambda: RotaryEmbedding(7), r"7"),
    "sinusoidal odd dim": (lambda: sinusoidal_encoding(10, 5), r"5"),
    "rnn wrong input size": (lambda: VanillaRNN(3, 4)(x(2, 5, 6)), r"3.*6"),
}


@pytest.mark.parametrize("name", CASES)
def test_bad_input_raises_value_error_with_expected_and_got(name):
    call, message = CASES[name]
    with pytest.raises(ValueError, match=message):
        call()


def test_at_least_twenty_cases():
    assert len(CASES) >= 20


def test_t_equals_one_works_everywhere():
    out, weights = scaled_dot_product_attention(x(1, 1, 4), x(1, 1, 4), x(1, 1, 3), causal=True)
    assert torch.equal(weights, torch.ones(1, 1, 1))
    mha = MultiHeadAttention(8, 2)
    assert torch.isfinite(mha(x(2, 1, 8), causal=True)[0]).all()
    value = x(1, 1, 3)
    assert torch.equal(chunked_attention(x(1, 1, 4), x(1, 1, 4), value, causal=True)[0], value)
