"""Every mechanism computes its result itself: none calls the built-in it re-implements."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attncourse.attention import (
    MultiHeadAttention,
    grouped_query_attention,
    scaled_dot_product_attention,
    softmax,
)
from attncourse.attention.alignment import AdditiveAttention, LuongAttention
from attncourse.attention.chunked import chunked_attention
from attncourse.attention.gated import GatedAttention, OutputGatedAttention
from attncourse.attention.linear import linear_attention
from attncourse.attention.sparse import (
    LearnableSparseMask,
    block_attention,
    local_attention,
    soft_masked_attention,
    strided_attention,
)
from attncourse.blocks import Highway, MultiScaleHighway, Residual, TransformerBlock
from attncourse.flow import attention_rollout, flow_statistics, mean_attention_distance
from attncourse.guard import BuiltinCalledError, forbidden_builtins
from attncourse.losses import cross_entropy, log_softmax
from attncourse.masks import padding_mask
from attncourse.norms import BatchNorm1d, LayerNorm, RMSNorm
from attncourse.positional import (
    LearnedPositionalEmbedding,
    RotaryEmbedding,
    alibi_bias,
    sinusoidal_encoding,
)
from attncourse.rnn import VanillaRNN

r = torch.randn
MECHANISMS = {
    "softmax": lambda x: softmax(x, temperature=0.5, mask=x > -1),
    "sdpa": lambda x: scaled_dot_product_attention(x, x, x, padding_mask([3, 4]), causal=True)[0],
    "sdpa+alibi": lambda x: scaled_dot_product_attention(x, x, x, alibi_bias(3, 4))[0],
    "gqa": lambda x: grouped_query_attention(x, x[:, :1], x[:, :1], causal=True)[0],
    "chunked": lambda x: chunked_attention(x, x, x, chunk_size=3, causal=True)[0],
    "linear": lambda x: linear_attention(x, x, x, causal=True)[0],
    "rope": lambda x: RotaryEmbedding(6)(x),
    "learned-positions": lambda x: LearnedPositionalEmbedding(4, 6)(x),
    "layernorm": lambda x: LayerNorm(6)(x),
    "rmsnorm": lambda x: RMSNorm(6)(x),
    "batchnorm": lambda x: BatchNorm1d(3)(x.flatten(2)),
    "mha": lambda x: MultiHeadAttention(6, 2)(x[0], x[1], causal=True)[0],
    "gated": lambda x: GatedAttention(6, 3)(x[0], causal=True)[0],
    "output-gated": lambda x: OutputGatedAttention(6, 2, headwise=True)(x[0], causal=True)[0],
    "local": lambda x: local_attention(x, x, x, 1, causal=True)[0],
    "block": lambda x: block_attention(x, x, x, 3)[0],
    "strided": lambda x: strided_attention(x, x, x, 2)[0],
    "soft-masked": lambda x: soft_masked_attention(x, x, x, LearnableSparseMask(4)(0.5))[0],
    "rollout": lambda x: attention_rollout([softmax(x[..., :4]), softmax(x[..., 2:])]),
    "flow-statistics": lambda x: (
        flow_statistics(softmax(x[..., :4])).entropy + mean_attention_distance(softmax(x[..., :4]))
    ),
    "additive": lambda x: AdditiveAttention(6, 6, 5)(x[0, :, 0], x[0])[0],
    "luong": lambda x: sum(
        LuongAttention(6, score=s)(x[0], x[1])[0] for s in LuongAttention.SCORES
    ),
    "post-block": lambda x: TransformerBlock(6, 2, norm="post")(x[0], causal=True)[0],
    "pre-block": lambda x: TransformerBlock(6, 2, norm="pre")(x[0])[0],
    "deepnorm-block": lambda x: TransformerBlock(6, 2, norm="deepnorm", num_layers=4)(x[0])[0],
    "residual": lambda x: Residual(nn.Linear(6, 6))(x),
    "highway": lambda x: Highway(6)(x),
    "multiscale-highway": lambda x: MultiScaleHighway(6)(x[0]),
    "rnn": lambda x: VanillaRNN(6, 5)(x[0]),
    "log_softmax": lambda x: log_softmax(x, dim=1),
    "cross_entropy": lambda x: cross_entropy(x, torch.zeros(x.shape[:-1], dtype=torch.long)),
}


@pytest.mark.parametrize("name", MECHANISMS)
def test_mechanism_runs_forward_and_backward_without_the_builtins(name):
    x = r(2, 3, 4, 6, requires_grad=True)
    with forbidden_builtins():
        out = MECHANISMS[name](x)
        out.square().sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    assert sinusoidal_encoding(4, 6).shape == (4, 6)


@pytest.mark.parametrize(
    "call",
    [
        lambda x: torch.softmax(x, -1),
        lambda x: x.softmax(-1),
        lambda x: F.softmax(x, -1),
        lambda x: F.cross_entropy(x[0, 0], torch.zeros(4, dtype=torch.long)),
        lambda x: nn.CrossEntropyLoss()(x[0, 0], torch.zeros(4, dtype=torch.long)),
        lambda x: F.scaled_dot_product_attention(x, x, x),
        lambda x: F.layer_norm(x, (6,)),
        lambda x: nn.LayerNorm(6)(x),
        lambda x: nn.RMSNorm(6)(x),
        lambda x: F.rms_norm(x, (6,)),
        lambda x: nn.MultiheadAttention(6, 2, batch_first=True)(x[0], x[0], x[0]),
        lambda x: nn.BatchNorm1d(4)(x[0]),
        lambda x: nn.TransformerEncoderLayer(6, 2, batch_first=True)(x[0]),
    ],
)
def test_the_guard_catches_each_builtin_and_restores_it(call):
    x = r(2, 3, 4, 6)
    with (
        pytest.raises(BuiltinCalledError, match="from plain tensor operations"),
        forbidden_builtins(),
    ):
        call(x)
    call(x)  # restored afterwards
