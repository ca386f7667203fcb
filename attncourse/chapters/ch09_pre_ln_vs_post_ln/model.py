"""The chapter's model and its gradients at initialisation: a small causal language model built
from ``attncourse.blocks.TransformerBlock`` with the LayerNorm after the residual sum (Post-LN,
source 004 Eq. 5.3.10), inside the branch (Pre-LN, Eq. 5.3.11) or DeepNorm's (Wang et al. 2022),
and the per-layer gradient norms of Xiong et al. 2020 (Thm. 1, Fig. 3).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from ..._validation import require_choice
from ...blocks import TransformerBlock
from ...losses import cross_entropy
from ...norms import LayerNorm
from ...threads import single_thread

NORM_PLACEMENTS = TransformerBlock.NORM_PLACEMENTS  # ("post", "pre", "deepnorm")


class CausalLM(nn.Module):
    """Token + learned position embeddings → N TransformerBlocks (causal) → [final LN] → logits.

    ``norm``: "post" (Eq. 5.3.10), "pre" (Eq. 5.3.11, with the final LayerNorm that Pre-LN needs,
    as in Xiong et al. 2020) or "deepnorm" (Wang et al. 2022). Linear weights are Xavier-normal
    (DeepNorm blocks keep their own β-scaled init), biases 0, embeddings N(0, 1/d).
    ``forward`` returns logits (B, T, vocab) and keeps every block's output in ``self.stream``.
    """

    def __init__(
        self,
        vocab: int,
        d_model: int = 32,
        num_heads: int = 4,
        num_layers: int = 6,
        norm: str = "pre",
        max_len: int = 64,
        dim_feedforward: int | None = None,
    ):
        super().__init__()
        require_choice("norm", norm, NORM_PLACEMENTS)
        self.norm = norm
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, num_heads, dim_feedforward, norm=norm, num_layers=num_layers)
            for _ in range(num_layers)
        )
        self.final_norm = LayerNorm(d_model) if norm == "pre" else nn.Identity()
        self.head = nn.Linear(d_model, vocab)
        for name, module in self.named_modules():
            if isinstance(module, nn.Linear):
                if not (norm == "deepnorm" and name.startswith("blocks.")):
                    nn.init.xavier_normal_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=d_model**-0.5)
        self.stream: list[torch.Tensor] = []

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        T = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(T))  # (B, T, d)
        self.stream = [x]
        for block in self.blocks:
            x, _ = block(x, causal=True)  # (B, T, d)
            self.stream.append(x)
        return self.head(self.final_norm(x))  # (B, T, vocab)


# ------------------------------------------------------------------ gradients at initialisation


def layer_gradient_norms(model, loss_fn: Callable[[nn.Module], torch.Tensor]) -> torch.Tensor:
    """‖∂L/∂W^{2,l}‖_F for every block l (bottom first): (N,) in the weights' dtype.

    W^{2,l} is block l's second FFN matrix (``model.blocks[l].ffn[2].weight``), the W^{2,L} of
    Xiong et al.'s Thm. 1 for the last block; L = ``loss_fn(model)``, a scalar. One backward pass
    with ``torch.autograd.grad``, so gradients left in ``.grad`` neither count nor change.
    """
    weights = [block.ffn[2].weight for block in model.blocks]
    grads = torch.autograd.grad(loss_fn(model), weights)  # one (d, 4d) gradient per block
    return torch.stack([g.pow(2).sum().sqrt() for g in grads])  # (N,)


@single_thread()
def init_gradients(
    norm: str,
    num_layers: int,
    *,
    d_model: int = 64,
    num_heads: int = 4,
    vocab: int = 64,
    batch: int = 8,
    length: int = 32,
    seeds=tuple(range(8)),
    final_norm: bool = True,
    through_branches: bool = True,
    dtype: torch.dtype = torch.float32,
) -> dict:
    """Gradients of a freshly initialised causal LM on random tokens (Xiong et al. 2020, Fig. 3).

    Returns, averaged over ``seeds`` (eight initialisations by default: Thm. 1 is about the
    expected gradient, and one initialisation's profile is noisy): ``w2``, ‖∂L/∂W^{2,l}‖_F for
    each layer's second FFN weight (the W^{2,L} of Thm. 1 is the last one; the numbers
    ``layer_gradient_norms`` gives), and ``w2_each``, the same for each initialisation
    (seeds, N); ``dx``, ‖∂L/∂x_l‖_F for the residual stream x_l (l = 0 … N;
    x_0 the embeddings, x_l block l's output); and ``rms``, the RMS of x_l (l = 0 … N).

    Two switches take Pre-LN apart (``norm="pre"`` only): ``final_norm=False`` drops the final
    LayerNorm before the output layer; ``through_branches=False`` keeps the forward pass but lets
    the backward pass reach x_l only along the identity paths (each sublayer reads a detached
    copy of the stream), so ∂L/∂x_l = ∂L/∂x_N: Eq. (5.3.12) without its ∂F/∂x term.
    """
    if (not final_norm or not through_branches) and norm != "pre":
        raise ValueError("final_norm and through_branches take a Pre-LN model apart: norm='pre'")
    w2, dx, rms = [], [], []
    for seed in seeds:
        torch.manual_seed(seed)
        model = CausalLM(vocab, d_model, num_heads, num_layers, norm=norm, max_len=length)
        model = model.to(dtype)
        if not final_norm:
            model.final_norm = nn.Identity()
        g = torch.Generator().manual_seed(1000 + seed)
        tokens = torch.randint(vocab, (batch, length + 1), generator=g)
        if through_branches:
            logits = model(tokens[:, :-1])  # (B, T, vocab)
        else:
            logits = _pre_ln_identity_backward(model, tokens[:, :-1])  # (B, T, vocab)
        for x in model.stream:
            x.retain_grad()
        cross_entropy(logits, tokens[:, 1:]).backward()
        w2.append([float(b.ffn[2].weight.grad.norm()) for b in model.blocks])
        dx.append([float(x.grad.norm()) for x in model.stream])
        rms.append([float(x.detach().pow(2).mean().sqrt()) for x in model.stream])
    mean = lambda rows: np.asarray(rows).mean(0)  # noqa: E731
    return {"w2": mean(w2), "dx": mean(dx), "rms": mean(rms), "w2_each": np.asarray(w2)}


def _pre_ln_identity_backward(model: CausalLM, tokens: torch.Tensor) -> torch.Tensor:
    """``model(tokens)`` for a Pre-LN model, with every sublayer reading a detached copy of the
    stream: the same numbers forward, gradients to x_l only through the identity paths."""
    T = tokens.shape[1]
    x = model.tok(tokens) + model.pos(torch.arange(T))  # (B, T, d)
    model.stream = [x]
    for block in model.blocks:
        x = x + block.attn(block.norm1(x.detach()), causal=True)[0]  # (B, T, d)
        x = x + block.ffn(block.norm2(x.detach()))  # (B, T, d)
        model.stream.append(x)
    return model.head(model.final_norm(x))  # (B, T, vocab)
