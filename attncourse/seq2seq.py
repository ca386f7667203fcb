"""Encoder-decoder models with and without attention: source 003 (the seq2seq bottleneck and soft
alignment) and source 000 §14.3.5 (Def. 14.3.12, Eq. 14.3.28-14.3.29).

What chapter 02 builds and measures, as plain functions that tests and benchmarks call:

* **Models** (``Seq2Seq``): a bidirectional GRU encoder h_1..h_n and a GRU decoder, with
  - ``"none"``: the fixed context C = [→h_n; ←h_1] (source 003's "固定向量 c") fed at every step
    (Cho et al. 2014's RNNencdec) — everything the decoder learns about x passes through C;
  - ``"additive"``: Bahdanau et al. 2015: e_tj = v_aᵀ tanh(W_a s_{t-1} + U_a h_j), α_t =
    softmax_j(e_t), c_t = Σ_j α_tj h_j, s_t = GRU(s_{t-1}, [y_{t-1}; c_t]) (source 003, steps 1-4);
  - ``"dot"``, ``"general"``, ``"concat"``: Luong et al. 2015's global attention, scored with the
    *current* state s_t: sᵀh_j, sᵀW_a h_j, v_aᵀ tanh(W_a[s; h_j]); read-out h̃_t = tanh(W_c[c_t; s_t]);
  - ``"local-m"``: Luong's local attention with a monotonic window: position t reads only
    |j - t| ≤ D (general score), which assumes the target follows the source's order.
  The scores come from ``attncourse.attention.AdditiveAttention`` / ``LuongAttention`` (softmax from
  scratch); torch supplies only nn.Embedding, nn.GRU, nn.Linear and Adam.
* **Training** (``train_seq2seq``, with a tqdm progress bar) on the synthetic tasks of
  ``attncourse.seq2seq_data``; **greedy decoding** (``greedy_decode``); **accuracy vs source
  length** (``accuracy_by_length``, the analogue of Bahdanau et al.'s Fig. 2); **alignments**
  (``alignment_matrices``, ``diagonal_fraction``, Fig. 3).
* **Information** (source 003, I(X;Y) ≤ I(X;C) ≤ H(C) ≤ log|C|): ``entropy_bits``,
  ``mutual_information_bits`` (exact, from a joint table), ``fano_information_bound`` (bits that a
  decoder with a given error rate must have received) and ``transmitted_bits``.
* **The widget**: ``decoding_traces`` (precomputed steps), ``DecodingPlot`` (figure updated in
  place), ``decoding_widget_update`` (redraw) and ``decoding_widget`` (controls).

Shapes: B batch, S source length, T target length (T = S here), E embedding size, H_e encoder
units per direction (keys and values have 2 H_e features), H_d decoder units, V vocabulary.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np
import torch
from torch import nn

from .attention import AdditiveAttention, LuongAttention
from .seq2seq_data import TASKS, length_schedule, make_batch, source_position
from .threads import single_thread
from .viz import BlittedFigure, figure_widget

KINDS = ("none", "additive", "dot", "general", "concat", "local-m")
LUONG_KINDS = ("dot", "general", "concat", "local-m")


def log_softmax(logits: torch.Tensor) -> torch.Tensor:
    """log softmax over the last dimension from plain operations (the course's rule)."""
    shifted = logits - logits.detach().amax(dim=-1, keepdim=True)  # (..., V)
    return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean -log p(target) over every position: logits (B, T, V), target (B, T) long -> ()."""
    logp = log_softmax(logits)  # (B, T, V)
    return -logp.gather(-1, target.unsqueeze(-1)).mean()


def _require_tokens(name: str, x, num_tokens: int) -> None:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor of token ids, got {type(x).__name__}")
    if x.dtype != torch.long:
        raise ValueError(f"{name} must hold token ids (torch.long), got dtype {x.dtype}")
    if x.dim() != 2 or x.shape[1] < 1:
        raise ValueError(f"{name} must be (B, n) with n >= 1, got shape {tuple(x.shape)}")
    if x.numel() and (int(x.min()) < 0 or int(x.max()) >= num_tokens):
        raise ValueError(f"{name} has token ids outside 0..{num_tokens - 1} (min {int(x.min())}, max {int(x.max())})")


class Seq2Seq(nn.Module):
    """Bidirectional GRU encoder, GRU decoder, and one of ``KINDS`` for the decoder's context.

    ``forward(source (B, S), target (B, T))`` runs the decoder with teacher forcing (it reads the
    true y_{t-1}) and returns (logits (B, T, V), weights (B, T, S) or None for ``"none"``).
    ``step``-wise greedy decoding is ``greedy_decode``. The decoder starts from s_0 = tanh(W_s C)
    in every model, so the models differ only in what the decoder reads at each step.
    """

    def __init__(self, attention: str = "additive", num_tokens: int = 20, emb_dim: int = 32,
                 enc_hidden: int = 32, dec_hidden: int | None = None, attn_hidden: int | None = None,
                 window: int = 3):
        super().__init__()
        if attention not in KINDS:
            raise ValueError(f"attention must be one of {KINDS}, got {attention!r}")
        for name, value in (("num_tokens", num_tokens), ("emb_dim", emb_dim), ("enc_hidden", enc_hidden)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if num_tokens < 2:
            raise ValueError(f"num_tokens must be >= 2, got {num_tokens}")
        if not isinstance(window, int) or window < 0:
            raise ValueError(f"window (local-m's D) must be an int >= 0, got {window!r}")
        key_dim = 2 * enc_hidden
        dec_hidden = key_dim if dec_hidden is None else dec_hidden
        attn_hidden = dec_hidden if attn_hidden is None else attn_hidden
        if attention == "dot" and dec_hidden != key_dim:
            raise ValueError(f"the dot score needs dec_hidden == 2 * enc_hidden = {key_dim}, got {dec_hidden}")
        self.kind, self.num_tokens, self.window = attention, num_tokens, window
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
            self.attention = LuongAttention(dec_hidden, key_dim, score=score, hidden_dim=attn_hidden)
        else:
            self.attention = None
        self.combine = nn.Linear(key_dim + dec_hidden, dec_hidden)  # h~_t = tanh(W_c [c_t; s_t])
        self.out = nn.Linear(dec_hidden, num_tokens)  # logits = W_o h~_t

    # ------------------------------------------------------------------ pieces

    def encode(self, source: torch.Tensor):
        """source (B, S) -> keys/values H (B, S, 2 H_e), fixed context C (B, 2 H_e), s_0 (B, H_d)."""
        _require_tokens("source", source, self.num_tokens)
        H, h_n = self.encoder(self.src_embed(source))  # (B, S, 2 H_e), (2, B, H_e)
        C = torch.cat([h_n[0], h_n[1]], dim=-1)  # (B, 2 H_e) [forward state at n; backward state at 1]
        s0 = torch.tanh(self.init_state(C))  # (B, H_d)
        return H, C, s0

    def window_mask(self, T: int, S: int, start: int = 0) -> torch.Tensor | None:
        """local-m: query t (rows start..start+T-1) may read source j iff |j - t| <= D. (T, S) bool."""
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
            raise ValueError(f"source and target must have the same batch size, got {source.shape[0]} and {target.shape[0]}")
        H, C, s0 = self.encode(source)
        y_prev = self.tgt_embed(self.decoder_inputs(target))  # (B, T, E)
        B, T = target.shape
        if self.kind == "none":
            C_t = C.unsqueeze(1).expand(B, T, C.shape[-1])  # (B, T, 2 H_e) the same C at every step
            states, _ = self.decoder(torch.cat([y_prev, C_t], dim=-1), s0.unsqueeze(0))  # (B, T, H_d)
            return self._readout(C_t, states), None
        if self.kind == "additive":  # c_t depends on s_{t-1}: one step at a time
            s, contexts, states, weights = s0, [], [], []
            for t in range(T):
                c, a = self.attention(s, H)  # (B, 2 H_e), (B, S)
                out, h = self.decoder(torch.cat([y_prev[:, t], c], dim=-1).unsqueeze(1), s.unsqueeze(0))
                s = h[0]  # (B, H_d)
                contexts.append(c), states.append(s), weights.append(a)
            ctx, st = torch.stack(contexts, 1), torch.stack(states, 1)  # (B, T, 2 H_e), (B, T, H_d)
            return self._readout(ctx, st), torch.stack(weights, 1)  # (B, T, V), (B, T, S)
        # Luong: s_t does not depend on c, so all T steps run in one GRU call, then attention at once
        states, _ = self.decoder(y_prev, s0.unsqueeze(0))  # (B, T, H_d)
        ctx, weights = self.attention(states, H, mask=self.window_mask(T, H.shape[1]))  # (B, T, 2 H_e), (B, T, S)
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
    """``Seq2Seq(attention, **sizes)`` initialised from ``seed`` without moving the global stream."""
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


# ------------------------------------------------------------------------------ training


class TrainResult(NamedTuple):
    losses: list
    lengths: list
    seconds: float


def train_seq2seq(model: Seq2Seq, task: str = "copy", steps: int = 300, lr: float = 1e-2, batch_size: int = 64,
                  min_length: int = 5, max_length: int = 30, clip: float = 1.0, seed: int = 0,
                  final_lr_fraction: float = 1.0, progress: bool = True, desc: str | None = None) -> TrainResult:
    """Adam on the teacher-forced cross-entropy, one random length per batch (uniform on
    min_length..max_length), gradient-norm clipping at ``clip``. Shows a tqdm progress bar.

    The learning rate follows a cosine from ``lr`` down to ``final_lr_fraction * lr`` (1.0: constant).
    Data come from a private generator seeded by ``seed``; runs single-threaded. Returns
    (losses per step, lengths per step, seconds).
    """
    from tqdm.auto import tqdm

    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    g = torch.Generator().manual_seed(seed)
    lengths = length_schedule(steps, min_length, max_length, g)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    start = time.perf_counter()
    model.train()
    with single_thread():
        bar = tqdm(lengths, desc=desc or f"{model.kind} on {task}", disable=not progress, mininterval=0.5)
        for step, n in enumerate(bar):
            if final_lr_fraction != 1.0:
                cosine = 0.5 * (1 + math.cos(math.pi * step / max(1, steps - 1)))  # 1 -> 0
                for group in opt.param_groups:
                    group["lr"] = lr * (final_lr_fraction + (1 - final_lr_fraction) * cosine)
            source, target = make_batch(task, batch_size, n, model.num_tokens, g)
            logits, _ = model(source, target)  # (B, n, V)
            loss = cross_entropy(logits, target)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            losses.append(float(loss.detach()))
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    return TrainResult(losses, lengths, time.perf_counter() - start)


# ------------------------------------------------------------------------------ the chapter's models

#: sizes of every chapter model: 20 tokens, embeddings 16, encoder 16 units per direction (keys
#: and the fixed context C have 32 features), decoder 32 units
CHAPTER_SIZES = {"num_tokens": 20, "emb_dim": 16, "enc_hidden": 16}
#: how ``scripts/train_ch02.py`` trains them (Bahdanau et al. trained on sentences up to 30 or 50 words)
CHAPTER_TRAINING = {"steps": 1500, "lr": 5e-3, "final_lr_fraction": 0.05, "batch_size": 64, "min_length": 5,
                    "max_length": 30, "clip": 1.0}
#: name -> (attention kind, task, seed)
CHAPTER_MODELS = {
    "none": ("none", "copy", 0),
    "additive": ("additive", "copy", 0),
    "dot": ("dot", "copy", 0),
    "general": ("general", "copy", 0),
    "concat": ("concat", "copy", 0),
    "local-m": ("local-m", "copy", 0),
    "local-m, reverse": ("local-m", "reverse", 0),
    "general, reverse": ("general", "reverse", 0),
}
#: per-model changes to CHAPTER_TRAINING (the dot score, with no learned map, needs longer)
CHAPTER_OVERRIDES = {"dot": {"steps": 3000}}
WEIGHTS_PATH = Path(__file__).resolve().parent / "weights" / "ch02_seq2seq.pt"


def train_chapter_models(names: Sequence[str] | None = None, progress: bool = True, **overrides) -> dict:
    """Train the chapter's models as ``scripts/train_ch02.py`` does: {name: (model, TrainResult)}.

    Each model uses ``CHAPTER_TRAINING`` with its ``CHAPTER_OVERRIDES``; ``overrides`` replace entries
    for every model (e.g. ``steps=100`` for a quick run).
    Deterministic: each model's initialisation and data come from its own seed.
    """
    names = list(CHAPTER_MODELS) if names is None else list(names)
    unknown = [n for n in names if n not in CHAPTER_MODELS]
    if unknown:
        raise ValueError(f"unknown chapter models {unknown}; choose from {list(CHAPTER_MODELS)}")
    out = {}
    for name in names:
        kind, task, seed = CHAPTER_MODELS[name]
        settings = {**CHAPTER_TRAINING, **CHAPTER_OVERRIDES.get(name, {}), **overrides}
        model = chapter_model(kind, seed=seed, **CHAPTER_SIZES)
        out[name] = (model, train_seq2seq(model, task, seed=seed, progress=progress, desc=name, **settings))
    return out


def save_chapter_models(models: dict, path=WEIGHTS_PATH, info: dict | None = None) -> None:
    """Store {name: model} as float16 state dicts (half the size; decoding is unchanged, which
    ``scripts/train_ch02.py`` checks) with the sizes, the training settings and ``info``."""
    payload = {
        "sizes": dict(CHAPTER_SIZES),
        "models": {name: {"kind": m.kind, "task": CHAPTER_MODELS.get(name, (m.kind, "copy", 0))[1],
                          "names": list(m.state_dict()),
                          "shapes": [list(v.shape) for v in m.state_dict().values()],
                          "flat": torch.cat([v.detach().flatten() for v in m.state_dict().values()]).half()}
                   for name, m in models.items()},
        "info": dict(info or {}),
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, path)


def load_chapter_models(path=WEIGHTS_PATH, names: Sequence[str] | None = None) -> dict:
    """The trained chapter models shipped with the package: {name: Seq2Seq in eval mode}.

    The training record stored with them (settings, losses, timings) is ``load_chapter_info(path)``.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `python scripts/train_ch02.py` to make it")
    payload = torch.load(path, weights_only=True)
    stored = payload["models"]
    names = list(stored) if names is None else list(names)
    models = {}
    for name in names:
        if name not in stored:
            raise ValueError(f"{path.name} has no model {name!r}; it has {list(stored)}")
        entry = stored[name]
        model = Seq2Seq(entry["kind"], **payload["sizes"])
        sizes = [math.prod(shape) for shape in entry["shapes"]]
        pieces = entry["flat"].float().split(sizes)
        model.load_state_dict({k: v.view(shape) for k, v, shape in zip(entry["names"], pieces, entry["shapes"])})
        models[name] = model.eval()
    return models


def load_chapter_info(path=WEIGHTS_PATH) -> dict:
    """What ``scripts/train_ch02.py`` recorded with the weights (settings, losses, timings)."""
    return torch.load(Path(path), weights_only=True)["info"]


# ------------------------------------------------------------------------------ evaluation


@torch.no_grad()
def accuracy_by_length(model: Seq2Seq, task: str, lengths: Sequence[int], samples: int = 100, seed: int = 1234,
                       per_position: bool = False):
    """Greedy-decoding token accuracy on ``samples`` fresh sources of each length (Bahdanau Fig. 2).

    Returns a float64 tensor (len(lengths),), or with ``per_position`` a list of (n,) tensors (the
    accuracy at each target position, for the information bound).
    """
    g = torch.Generator().manual_seed(seed)
    out = []
    with single_thread():
        for n in lengths:
            source, target = make_batch(task, samples, int(n), model.num_tokens, g)
            tokens, _ = greedy_decode(model, source)
            correct = (tokens == target).double()  # (samples, n)
            out.append(correct.mean(0) if per_position else correct.mean())
    return out if per_position else torch.stack(out)


@torch.no_grad()
def alignment_matrices(model: Seq2Seq, source: torch.Tensor) -> torch.Tensor:
    """Greedy-decoding attention weights (B, T, S) for ``source`` (B, S); rows sum to 1."""
    if model.kind == "none":
        raise ValueError("the 'none' model has no attention weights: it reads the same fixed context C at every step")
    with single_thread():
        _, weights = greedy_decode(model, source)
    return weights


def diagonal_fraction(weights: torch.Tensor, task: str = "copy", band: int = 1) -> float:
    """Share of target rows whose attention peak lies within ±band of the task's true alignment.

    weights (..., T, S) with T = S: copy's alignment is j = t, reverse's j = n - 1 - t.
    """
    if weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be (..., n, n) with as many targets as sources, got {tuple(weights.shape)}")
    n = weights.shape[-1]
    peak = weights.argmax(dim=-1)  # (..., T)
    t = torch.arange(n)
    wanted = t if task == "copy" else n - 1 - t  # (T,)
    return float(((peak - wanted).abs() <= band).double().mean())


def peak_offsets(weights: torch.Tensor, task: str = "copy") -> torch.Tensor:
    """argmax_j α_tj minus the true source position, for every row: (..., T) long."""
    n = weights.shape[-1]
    t = torch.arange(weights.shape[-2])
    wanted = t if task == "copy" else n - 1 - t
    return weights.argmax(dim=-1) - wanted


# ------------------------------------------------------------------------------ information


def entropy_bits(p) -> float:
    """H(p) = -Σ p log2 p in bits of a probability table of any shape (0 log 0 = 0)."""
    p = torch.as_tensor(p, dtype=torch.float64)
    if (p < 0).any() or not math.isclose(float(p.sum()), 1.0, abs_tol=1e-6):
        raise ValueError(f"p must be non-negative and sum to 1, got sum {float(p.sum()):.6g}")
    nz = p[p > 0]
    return float(-(nz * nz.log2()).sum())


def mutual_information_bits(joint) -> float:
    """I(X; Y) = Σ p(x, y) log2 [p(x, y) / (p(x) p(y))] in bits, from a joint table (|X|, |Y|).

    Equals H(X) + H(Y) - H(X, Y). The table must be non-negative and sum to 1.
    """
    p = torch.as_tensor(joint, dtype=torch.float64)
    if p.dim() != 2:
        raise ValueError(f"joint must be a 2-D table p(x, y), got shape {tuple(p.shape)}")
    return max(0.0, entropy_bits(p.sum(1)) + entropy_bits(p.sum(0)) - entropy_bits(p))  # >= 0; clip rounding


def joint_table(x_ids, y_ids, num_x: int, num_y: int, weights=None) -> torch.Tensor:
    """The joint distribution of two discrete variables from paired outcomes (with optional
    probabilities ``weights``, default uniform): (num_x, num_y) float64 summing to 1."""
    x = torch.as_tensor(x_ids, dtype=torch.long)
    y = torch.as_tensor(y_ids, dtype=torch.long)
    w = torch.full(x.shape, 1.0 / x.numel(), dtype=torch.float64) if weights is None else torch.as_tensor(weights, dtype=torch.float64)
    table = torch.zeros(num_x * num_y, dtype=torch.float64)
    table.index_add_(0, x * num_y + y, w)
    return table.view(num_x, num_y)


def binary_entropy_bits(p: float) -> float:
    """h(p) = -p log2 p - (1-p) log2 (1-p), with h(0) = h(1) = 0."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p}")
    return sum(-q * math.log2(q) for q in (p, 1.0 - p) if q > 0)


def fano_information_bound(error_rate: float, num_tokens: int) -> float:
    """Fano: H(X_i | Y_i) ≤ h(p) + p log2(V - 1), so a uniform token X_i decoded with error rate p
    gives I(X_i; Y_i) ≥ log2 V - h(p) - p log2(V - 1) bits (0 at chance, p = 1 - 1/V). Clipped at 0."""
    if num_tokens < 2:
        raise ValueError(f"num_tokens must be >= 2, got {num_tokens}")
    if not 0.0 <= error_rate <= 1.0:
        raise ValueError(f"error_rate must be in [0, 1], got {error_rate}")
    bound = math.log2(num_tokens) - binary_entropy_bits(error_rate) - error_rate * math.log2(num_tokens - 1)
    return max(0.0, bound)


def transmitted_bits(position_accuracy, num_tokens: int) -> float:
    """A lower bound on I(X; Y) from the accuracy at each target position: Σ_i Fano bound.

    For independent tokens, I(X; Y) ≥ Σ_i I(X_i; Y_i) (chain rule), and each term is bounded
    below by Fano's inequality. For a model without attention, Y is a function of C alone, so
    this is also a lower bound on I(X; C) ≤ H(C): the bits C must carry (source 003).
    """
    acc = torch.as_tensor(position_accuracy, dtype=torch.float64).flatten()
    return sum(fano_information_bound(1.0 - float(a), num_tokens) for a in acc)


# ------------------------------------------------------------------------------ the widget


class DecodingTrace(NamedTuple):
    """One example decoded by one model, every step precomputed for the widget."""

    model: str
    task: str
    source: list  # (S,) token ids
    target: list  # (T,)
    output: list  # (T,) greedy tokens
    weights: np.ndarray  # (T, S) attention rows (zeros for "none")


@torch.no_grad()
def decoding_traces(models: dict, task: str, sources: torch.Tensor) -> dict:
    """Greedy-decode every source (B, S) with every model: {(model name, example index): trace}."""
    from .seq2seq_data import make_target

    target = make_target(task, sources)  # (B, S)
    traces = {}
    with single_thread():
        for name, model in models.items():
            tokens, weights = greedy_decode(model, sources)
            for b in range(sources.shape[0]):
                w = np.zeros((sources.shape[1], sources.shape[1])) if weights is None else weights[b].double().numpy()
                traces[name, b] = DecodingTrace(name, task, sources[b].tolist(), target[b].tolist(),
                                                tokens[b].tolist(), w)
    return traces


class DecodingPlot(BlittedFigure):
    """Left: the alignment matrix filled up to the current step t, with the true alignment
    outlined; right: row t (the weights α_t over source positions) as bars, the true source
    position marked. ``update(trace, t)`` only changes artists' data (blitting).
    """

    def __init__(self, length: int, pyplot: bool = False, figsize=(9.0, 3.4), dpi: int = 80):
        super().__init__(pyplot, figsize, dpi)
        self.length = length
        fig = self.figure
        ax_m, ax_r = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        self._image = ax_m.imshow(np.zeros((length, length)), cmap="viridis", vmin=0, vmax=1, aspect="auto",
                                  interpolation="nearest")
        ax_m.set(xlabel="source position j", ylabel="target step t", title="alignment alpha_tj (rows so far)")
        (self._cursor,) = ax_m.plot([], [], color="w", lw=1.5)
        (self._truth,) = ax_m.plot([], [], "r+", ms=5, alpha=0.8)
        self._bars = list(ax_r.bar(range(length), [0.0] * length, color="tab:blue"))
        (self._true_pos,) = ax_r.plot([], [], "rv", ms=9)
        ax_r.set(xlim=(-0.6, length - 0.4), ylim=(0, 1.05), xlabel="source position j",
                 title="row t: weights over the source")
        fig.subplots_adjust(left=0.07, right=0.98, top=0.8 if pyplot else 0.9, bottom=0.15, wspace=0.25)
        self._title = fig.suptitle("", fontsize=9) if pyplot else None
        self._animate([self._image, self._cursor, self._truth, *self._bars, self._true_pos])

    def update(self, trace: DecodingTrace, t: int) -> None:
        n = len(trace.source)
        if n != self.length:
            raise ValueError(f"this plot shows length {self.length}, the trace has length {n}")
        if not 0 <= t < n:
            raise ValueError(f"step t must be in [0, {n}), got {t}")
        shown = np.zeros_like(trace.weights)
        shown[: t + 1] = trace.weights[: t + 1]
        self._image.set_data(shown)
        self._cursor.set_data([-0.5, n - 0.5], [t, t])
        truth = [source_position(trace.task, r, n) for r in range(n)]
        self._truth.set_data(truth, list(range(n)))
        for bar, h in zip(self._bars, trace.weights[t].tolist()):
            bar.set_height(h)
        self._true_pos.set_data([truth[t]], [1.0])
        if self._title is not None:
            self._title.set_text(decoding_caption(trace, t))


def decoding_caption(trace: DecodingTrace, t: int) -> str:
    """One line of text for step t: the token read, the token written, where attention peaks."""
    n = len(trace.source)
    j_true = source_position(trace.task, t, n)
    got, want = trace.output[t], trace.target[t]
    if trace.model == "none":
        where = "no attention: the same fixed C at every step"
    else:
        j = int(np.argmax(trace.weights[t]))
        where = f"attention peak at j = {j} (weight {trace.weights[t, j]:.2f}), true position {j_true}"
    mark = "correct" if got == want else f"WRONG (want {want})"
    correct = sum(o == w for o, w in zip(trace.output, trace.target))
    name = trace.model if trace.task in trace.model else f"{trace.model}, {trace.task}"
    return (f"{name}, step t = {t}: wrote {got} {mark} | {where} | "
            f"sequence accuracy {correct}/{n}")


def decoding_widget_update(plot: DecodingPlot, traces: dict, model: str, example: int, t: int):
    """One widget update: look the trace up, move the artists, render -> (trace, png, caption).
    Nothing is computed here but the redraw; the benchmark times exactly this function."""
    trace = traces[model, example]
    plot.update(trace, t)
    return trace, plot.render_png(), decoding_caption(trace, t)


def decoding_widget(traces: dict, model: str | None = None, example: int = 0, t: int = 0):
    """The chapter-02 widget: choose a model and an example, step through greedy decoding and
    watch the alignment row move (all steps precomputed by ``decoding_traces``)."""
    import ipywidgets as widgets

    names = list(dict.fromkeys(name for name, _ in traces))
    examples = sorted({b for _, b in traces})
    model = names[0] if model is None else model
    length = len(traces[model, example].source)
    plot = DecodingPlot(length)
    style = {"description_width": "90px"}
    controls = {
        "model": widgets.ToggleButtons(options=names, value=model, description="model", style=style),
        "example": widgets.Dropdown(options=examples, value=example, description="example", style=style),
        "t": widgets.IntSlider(value=t, min=0, max=length - 1, step=1, description="step t", style=style),
    }

    def update(plot, model, example, t):
        trace, png, caption = decoding_widget_update(plot, traces, model, example, t)
        return trace, png, sequences_html(trace, t) + "<br>" + caption

    return figure_widget(plot, update, controls, rows=[["model"], ["example", "t"]])


def sequences_html(trace: DecodingTrace, t: int) -> str:
    """Source, target and the output written up to step t (green right, red wrong, step t bold)."""
    cells = []
    for i, (o, w) in enumerate(zip(trace.output, trace.target)):
        color, weight = ("green" if o == w else "red"), ("bold" if i == t else "normal")
        cells.append(f"<span style='color:{color};font-weight:{weight}'>{o if i <= t else '·'}</span>")
    return ("source: " + " ".join(str(x) for x in trace.source) + "<br>target: "
            + " ".join(str(x) for x in trace.target) + "<br>output: " + " ".join(cells))


__all__ = [
    "CHAPTER_MODELS", "CHAPTER_OVERRIDES", "CHAPTER_SIZES", "CHAPTER_TRAINING", "WEIGHTS_PATH", "load_chapter_info",
    "load_chapter_models", "save_chapter_models", "train_chapter_models",
    "DecodingPlot", "DecodingTrace", "KINDS", "LUONG_KINDS", "Seq2Seq", "TrainResult", "accuracy_by_length",
    "alignment_matrices", "binary_entropy_bits", "chapter_model", "cross_entropy", "decoding_caption",
    "decoding_traces", "decoding_widget", "decoding_widget_update", "diagonal_fraction", "entropy_bits",
    "fano_information_bound", "greedy_decode", "joint_table", "log_softmax", "mutual_information_bits",
    "peak_offsets", "train_seq2seq", "transmitted_bits",
]
