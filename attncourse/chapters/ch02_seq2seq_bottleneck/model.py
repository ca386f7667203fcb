"""Encoder-decoders with and without attention (source 003; Bahdanau et al. 2015; Luong et al.
2015), and greedy decoding.

Shapes: B batch, S source length, T target length (T = S here), E embedding size, H_e encoder
units per direction (keys and values have 2 H_e features), H_d decoder units, V vocabulary.
"""

from __future__ import annotations

import torch
from torch import nn

from ..._validation import require_choice, require_positive_int
from ...attention import AdditiveAttention, LuongAttention

ATTENTION_KINDS = ("none", "additive", "dot", "general", "concat", "local-m")
LUONG_KINDS = ("dot", "general", "concat", "local-m")


def _require_tokens(name: str, x, num_tokens: int) -> None:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor of token ids, got {type(x).__name__}")
    if x.dtype != torch.long:
        raise ValueError(f"{name} must hold token ids (torch.long), got dtype {x.dtype}")
    if x.dim() != 2 or x.shape[1] < 1:
        raise ValueError(f"{name} must be (B, n) with n >= 1, got shape {tuple(x.shape)}")
    if x.numel() and (int(x.min()) < 0 or int(x.max()) >= num_tokens):
        raise ValueError(
            f"{name} has token ids outside 0..{num_tokens - 1} "
            f"(min {int(x.min())}, max {int(x.max())})"
        )


class Seq2Seq(nn.Module):
    """Bidirectional GRU encoder, GRU decoder, one of ``ATTENTION_KINDS`` for the decoder's context.

    ``forward(source (B, S), target (B, T))`` runs the decoder with teacher forcing (it reads the
    true y_{t-1}) and returns (logits (B, T, V), weights (B, T, S) or None for ``"none"``).
    ``step``-wise greedy decoding is ``greedy_decode``. The decoder starts from s_0 = tanh(W_s C)
    in every model, so the models differ only in what the decoder reads at each step.
    """

    def __init__(
        self,
        attention: str = "additive",
        num_tokens: int = 20,
        emb_dim: int = 32,
        enc_hidden: int = 32,
        dec_hidden: int | None = None,
        attn_hidden: int | None = None,
        window: int = 3,
    ):
        super().__init__()
        require_choice("attention", attention, ATTENTION_KINDS)
        for name, value in (
            ("num_tokens", num_tokens),
            ("emb_dim", emb_dim),
            ("enc_hidden", enc_hidden),
        ):
            require_positive_int(name, value)
        if num_tokens < 2:
            raise ValueError(f"num_tokens must be >= 2, got {num_tokens}")
        if not isinstance(window, int) or window < 0:
            raise ValueError(f"window (local-m's D) must be an int >= 0, got {window!r}")
        key_dim = 2 * enc_hidden
        dec_hidden = key_dim if dec_hidden is None else dec_hidden
        attn_hidden = dec_hidden if attn_hidden is None else attn_hidden
        if attention == "dot" and dec_hidden != key_dim:
            raise ValueError(
                f"the dot score needs dec_hidden == 2 * enc_hidden = {key_dim}, got {dec_hidden}"
            )
        self.kind, self.num_tokens, self.window = attention, num_tokens, window
        #: the constructor's arguments: ``Seq2Seq(**model.config)`` builds the same architecture
        self.config = {
            "attention": attention,
            "num_tokens": num_tokens,
            "emb_dim": emb_dim,
            "enc_hidden": enc_hidden,
            "dec_hidden": dec_hidden,
            "attn_hidden": attn_hidden,
            "window": window,
        }
        self.key_dim, self.dec_hidden = key_dim, dec_hidden
        self.bos = num_tokens  # the decoder's start symbol y_0, an extra embedding row
        self.src_embed = nn.Embedding(num_tokens, emb_dim)
        self.encoder = nn.GRU(emb_dim, enc_hidden, batch_first=True, bidirectional=True)
        self.tgt_embed = nn.Embedding(num_tokens + 1, emb_dim)
        self.init_state = nn.Linear(key_dim, dec_hidden)  # s_0 = tanh(W_s C)
        # the decoder reads [y_{t-1}; C] (none), [y_{t-1}; c_t] (additive) or y_{t-1} (Luong)
        dec_in = emb_dim + (key_dim if attention in ("none", "additive") else 0)
        self.decoder = nn.GRU(dec_in, dec_hidden, batch_first=True)
        if attention == "additive":
            self.attention = AdditiveAttention(dec_hidden, key_dim, attn_hidden)
        elif attention != "none":
            score = "general" if attention == "local-m" else attention
            self.attention = LuongAttention(
                dec_hidden, key_dim, score=score, hidden_dim=attn_hidden
            )
        else:
            self.attention = None
        self.combine = nn.Linear(key_dim + dec_hidden, dec_hidden)  # h~_t = tanh(W_c [c_t; s_t])
        self.out = nn.Linear(dec_hidden, num_tokens)  # logits = W_o h~_t

    # ------------------------------------------------------------------ pieces

    def encode(self, source: torch.Tensor):
        """source (B, S) -> (H, C, s_0).

        H (B, S, 2 H_e): the keys and values; C (B, 2 H_e): the fixed context; s_0 (B, H_d).
        """
        _require_tokens("source", source, self.num_tokens)
        H, h_n = self.encoder(self.src_embed(source))  # (B, S, 2 H_e), (2, B, H_e)
        # C = [forward state at n; backward state at 1]
        C = torch.cat([h_n[0], h_n[1]], dim=-1)  # (B, 2 H_e)
        s0 = torch.tanh(self.init_state(C))  # (B, H_d)
        return H, C, s0

    def window_mask(self, T: int, S: int, start: int = 0) -> torch.Tensor | None:
        """local-m: query t (rows start..start+T-1) may read source j iff |j - t| <= D.

        Returns a (T, S) bool mask, or None for every other kind.
        """
        if self.kind != "local-m":
            return None
        t = torch.arange(start, start + T)[:, None]  # (T, 1)
        j = torch.arange(S)[None, :]  # (1, S)
        return (j - t).abs() <= self.window  # (T, S)

    def _readout(self, context: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return self.out(torch.tanh(self.combine(torch.cat([context, state], dim=-1))))  # (..., V)

    def decoder_inputs(self, target: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: y_0 = BOS, then y_1..y_{T-1}. (B, T) long."""
        bos = torch.full_like(target[:, :1], self.bos)  # (B, 1)
        return torch.cat([bos, target[:, :-1]], dim=1)  # (B, T)

    # ------------------------------------------------------------------ teacher forcing

    def forward(self, source: torch.Tensor, target: torch.Tensor):
        _require_tokens("target", target, self.num_tokens)
        if target.shape[0] != source.shape[0]:
            raise ValueError(
                "source and target must have the same batch size, "
                f"got {source.shape[0]} and {target.shape[0]}"
            )
        H, C, s0 = self.encode(source)
        y_prev = self.tgt_embed(self.decoder_inputs(target))  # (B, T, E)
        B, T = target.shape
        if self.kind == "none":
            C_t = C.unsqueeze(1).expand(B, T, C.shape[-1])  # (B, T, 2 H_e) the same C at every step
            states, _ = self.decoder(
                torch.cat([y_prev, C_t], dim=-1), s0.unsqueeze(0)
            )  # (B, T, H_d)
            return self._readout(C_t, states), None
        if self.kind == "additive":  # c_t depends on s_{t-1}: one step at a time
            s, contexts, states, weights = s0, [], [], []
            for t in range(T):
                c, a = self.attention(s, H)  # (B, 2 H_e), (B, S)
                out, h = self.decoder(
                    torch.cat([y_prev[:, t], c], dim=-1).unsqueeze(1), s.unsqueeze(0)
                )
                s = h[0]  # (B, H_d)
                contexts.append(c), states.append(s), weights.append(a)
            ctx, st = torch.stack(contexts, 1), torch.stack(states, 1)  # (B, T, 2 H_e), (B, T, H_d)
            return self._readout(ctx, st), torch.stack(weights, 1)  # (B, T, V), (B, T, S)
        # Luong: s_t does not depend on c, so all T steps run in one GRU call, then attention for
        # all of them at once
        states, _ = self.decoder(y_prev, s0.unsqueeze(0))  # (B, T, H_d)
        mask = self.window_mask(T, H.shape[1])  # (T, S) or None
        ctx, weights = self.attention(states, H, mask=mask)  # (B, T, 2 H_e), (B, T, S)
        return self._readout(ctx, states), weights

    # ------------------------------------------------------------------ one decoding step

    def step(self, y_prev: torch.Tensor, s: torch.Tensor, H: torch.Tensor, C: torch.Tensor, t: int):
        """One decoding step t from the previous token y_{t-1} (B,) and state s_{t-1} (B, H_d).

        Returns (logits (B, V), s_t (B, H_d), weights (B, S) or None).
        """
        e = self.tgt_embed(y_prev)  # (B, E)
        if self.kind == "none":
            _, h = self.decoder(torch.cat([e, C], dim=-1).unsqueeze(1), s.unsqueeze(0))
            return self._readout(C, h[0]), h[0], None
        if self.kind == "additive":
            c, a = self.attention(s, H)  # (B, 2 H_e), (B, S)
            _, h = self.decoder(torch.cat([e, c], dim=-1).unsqueeze(1), s.unsqueeze(0))
            return self._readout(c, h[0]), h[0], a
        _, h = self.decoder(e.unsqueeze(1), s.unsqueeze(0))
        s_t = h[0]  # (B, H_d)
        mask = self.window_mask(1, H.shape[1], start=t)  # (1, S) or None
        c, a = self.attention(s_t, H, mask=mask)  # (B, 2 H_e), (B, S)
        return self._readout(c, s_t), s_t, a


def chapter_model(attention: str, seed: int = 0, **sizes) -> Seq2Seq:
    """``Seq2Seq(attention, **sizes)`` initialised from ``seed``; the global stream is untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Seq2Seq(attention, **sizes)


# ------------------------------------------------------------------------------ decoding


@torch.no_grad()
def greedy_decode(model: Seq2Seq, source: torch.Tensor, steps: int | None = None):
    """Greedy decoding: y_t = argmax p(y | y_<t, x), fed back as the next input.

    Returns (tokens (B, T) long, weights (B, T, S) or None). ``steps`` defaults to S.
    """
    was_training = model.training
    model.eval()
    H, C, s = model.encode(source)
    B, S = source.shape
    steps = S if steps is None else steps
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    y = torch.full((B,), model.bos, dtype=torch.long)
    tokens, weights = [], []
    for t in range(steps):
        logits, s, a = model.step(y, s, H, C, t)
        y = logits.argmax(dim=-1)  # (B,)
        tokens.append(y)
        weights.append(a)
    model.train(was_training)
    stacked = None if weights[0] is None else torch.stack(weights, 1)  # (B, T, S)
    return torch.stack(tokens, 1), stacked
