"""Linear attention (source 000 Def. 14.3.18, Lemma 14.3.24, Thm. 14.3.16; Katharopoulos et al.
2020): the parallel and the recurrent form, the rank of its weight matrix, positive random
features (Choromanski et al. 2021), and the two tasks that separate it from softmax attention:
associative recall beyond its capacity (Schlag et al. 2021) and the copy task, where it matches."""

from __future__ import annotations

import math
import time

import torch
from torch import nn

from ...attention import linear_attention, scaled_dot_product_attention, softmax
from ...attention.linear import elu_feature_map
from ...losses import cross_entropy
from ...threads import single_thread
from .models import TinyLM, train_lm

# ------------------------------------------------------------------ the two forms


def linear_attention_matrix(q, k, causal: bool = False, feature_map=elu_feature_map):
    """A_ij = phi(q_i)^T phi(k_j) / sum_j' phi(q_i)^T phi(k_j') (Eq. 14.3.46), written out as a
    (T, S) matrix (j' <= i when causal). q (..., T, d), k (..., S, d)."""
    kernel = feature_map(q) @ feature_map(k).transpose(-2, -1)  # (..., T, S)
    if causal:
        kernel = kernel.tril()
    return kernel / kernel.sum(dim=-1, keepdim=True)  # (..., T, S)


def parallel_linear_attention(q, k, v, causal: bool = True):
    """The parallel form: the (T, T) matrix of Eq. (14.3.46) times v. O(T² d) time, O(T²) memory."""
    weights = linear_attention_matrix(q, k, causal)  # (..., T, T)
    return weights @ v, weights  # (..., T, d_v)


def recurrent_linear_attention(q, k, v):
    """The recurrent ("transformer as an RNN") form of causal linear attention, one position at
    a time (Katharopoulos et al. 2020, Eq. 16-20):

        S_i = S_{i-1} + phi(k_i) v_i^T,  z_i = z_{i-1} + phi(k_i),
        out_i = phi(q_i)^T S_i / phi(q_i)^T z_i.

    A state of d_k x d_v + d_k numbers, whatever the length: O(T d_k d_v) time, O(d_k d_v) memory.
    q, k (..., T, d_k), v (..., T, d_v) -> (..., T, d_v).
    """
    phi_q, phi_k = elu_feature_map(q), elu_feature_map(k)  # (..., T, d_k)
    S = q.new_zeros(*q.shape[:-2], q.shape[-1], v.shape[-1])  # (..., d_k, d_v)
    z = q.new_zeros(*q.shape[:-2], q.shape[-1])  # (..., d_k)
    outputs = []
    for i in range(q.shape[-2]):
        S = S + phi_k[..., i, :, None] * v[..., i, None, :]  # (..., d_k, d_v)
        z = z + phi_k[..., i, :]  # (..., d_k)
        numerator = (phi_q[..., i, :, None] * S).sum(dim=-2)  # (..., d_v)
        outputs.append(numerator / (phi_q[..., i, :] * z).sum(dim=-1, keepdim=True))
    return torch.stack(outputs, dim=-2)  # (..., T, d_v)


def numerical_rank(A: torch.Tensor, rtol: float = 1e-9) -> int:
    """Number of singular values above rtol x the largest (computed in float64)."""
    s = torch.linalg.svdvals(A.double())
    return int((s > rtol * s[0]).sum())


def positive_random_features(x: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """phi(x) = exp(W^T x - |x|² / 2) / sqrt(m) with W (d, m) ~ N(0, I) (Performer, FAVOR+):
    E[phi(q)^T phi(k)] = exp(q^T k), so linear attention with it approximates softmax attention
    as m grows. x (..., d) -> (..., m)."""
    m = W.shape[1]
    return torch.exp(x @ W - (x**2).sum(dim=-1, keepdim=True) / 2) / math.sqrt(m)


def total_variation(A: torch.Tensor, B: torch.Tensor) -> float:
    """Mean over rows of (1/2) sum_j |A_ij - B_ij|: 0 for equal distributions, 1 for disjoint."""
    return float(0.5 * (A - B).abs().sum(dim=-1).mean())


def _fastest_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return 1000 * min(times)


@single_thread()
@torch.no_grad()
def causal_linear_stages(n: int, d: int = 64, repeats: int = 3, seed: int = 0) -> dict:
    """Where the time of the package's causal linear attention goes at length ``n`` (one head,
    d_k = d_v = ``d``, float32, one thread; processor time of the fastest of ``repeats`` runs, in
    ms): "whole forward" the package's ``linear_attention(q, k, v, causal=True)``, as the cost
    table measures it; "outer" the n products phi(k_j) v_j^T, (n, d, d); "prefix sum" their
    cumulative sum over the positions as the package lays them out (positions first, so the sum
    steps through memory d·d numbers at a time); "read-out" phi(q_i)^T S_i; and "prefix sum,
    positions last" the same sum on a copy laid out (d, d, n), which reads memory in order."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(n, d, generator=g) for _ in range(3))  # (n, d) each
    phi_q, phi_k = elu_feature_map(q), elu_feature_map(k)  # (n, d)
    outer = phi_k.unsqueeze(-1) * v.unsqueeze(-2)  # (n, d, d)
    states = torch.cumsum(outer, dim=0)  # (n, d, d) prefix sums S_i
    positions_last = outer.permute(1, 2, 0).contiguous()  # (d, d, n)
    return {
        "whole forward": _fastest_ms(lambda: linear_attention(q, k, v, causal=True), repeats),
        "outer": _fastest_ms(lambda: phi_k.unsqueeze(-1) * v.unsqueeze(-2), repeats),
        "prefix sum": _fastest_ms(lambda: torch.cumsum(outer, dim=0), repeats),
        "read-out": _fastest_ms(lambda: (phi_q.unsqueeze(-2) @ states).squeeze(-2), repeats),
        "prefix sum, positions last": _fastest_ms(
            lambda: torch.cumsum(positions_last, dim=-1), repeats
        ),
    }


# ------------------------------------------------------------------ associative recall

NUM_KEYS, NUM_VALUES = 64, 16


def recall_batch(batch_size: int, pairs: int, generator: torch.Generator):
    """``pairs`` distinct keys (of NUM_KEYS) with random values (of NUM_VALUES), and a query that
    is one of the keys: (keys (B, n), values (B, n), query (B,), answer (B,), index (B,))."""
    keys = torch.argsort(torch.rand(batch_size, NUM_KEYS, generator=generator), dim=-1)[:, :pairs]
    values = torch.randint(NUM_VALUES, (batch_size, pairs), generator=generator)
    index = torch.randint(pairs, (batch_size,), generator=generator)
    rows = torch.arange(batch_size)
    return keys, values, keys[rows, index], values[rows, index], index


class RecallModel(nn.Module):
    """One attention layer over key-value pairs: pair j is the vector E_k[key_j] + E_v[value_j],
    the query E_k[query]; scores use d_k = ``key_dim`` dimensions (Schlag et al. 2021: a linear
    attention's memory phi(K)^T V holds about d_k pairs without interference). ``kind`` is
    "softmax" or "linear" (phi = elu + 1)."""

    def __init__(self, kind: str = "softmax", key_dim: int = 8, d: int = 64):
        super().__init__()
        if kind not in ("softmax", "linear"):
            raise ValueError(f"kind must be 'softmax' or 'linear', got {kind!r}")
        self.kind = kind
        self.key_embed, self.value_embed = nn.Embedding(NUM_KEYS, d), nn.Embedding(NUM_VALUES, d)
        self.w_q, self.w_k = nn.Linear(d, key_dim), nn.Linear(d, key_dim)
        self.w_v, self.out = nn.Linear(d, d), nn.Linear(d, NUM_VALUES)

    def project(self, keys, values, query):
        pairs = self.key_embed(keys) + self.value_embed(values)  # (B, n, d)
        q = self.w_q(self.key_embed(query))[:, None]  # (B, 1, d_k)
        return q, self.w_k(pairs), self.w_v(pairs)  # (B, 1, d_k), (B, n, d_k), (B, n, d)

    def forward(self, keys, values, query):
        q, k, v = self.project(keys, values, query)
        if self.kind == "softmax":
            out, _ = scaled_dot_product_attention(q, k, v)  # (B, 1, d)
        else:
            out, _ = linear_attention(q, k, v)  # (B, 1, d)
        return self.out(out[:, 0])  # (B, NUM_VALUES)

    def weights(self, keys, values, query):
        """The query's attention weights over the pairs (B, n)."""
        q, k, _ = self.project(keys, values, query)
        if self.kind == "softmax":
            return softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]))[:, 0]
        return linear_attention_matrix(q, k)[:, 0]


@single_thread()
def train_recall(
    model: RecallModel,
    pairs: int,
    steps: int = 300,
    lr: float = 3e-3,
    batch_size: int = 64,
    seed: int = 0,
    progress: bool = True,
) -> list[float]:
    """Adam on cross-entropy of the recalled value; returns the losses."""
    from tqdm.auto import tqdm

    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    desc = f"recall, {model.kind}, {pairs} pairs"
    for _ in tqdm(range(steps), desc=desc, disable=not progress, mininterval=0.5):
        keys, values, query, answer, _ = recall_batch(batch_size, pairs, g)
        loss = cross_entropy(model(keys, values, query), answer)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


@torch.no_grad()
def recall_scores(model: RecallModel, pairs: int, samples: int = 2000, seed: int = 999):
    """(accuracy, mean weight on the right pair) on fresh sequences."""
    keys, values, query, answer, index = recall_batch(
        samples, pairs, torch.Generator().manual_seed(seed)
    )
    accuracy = float((model(keys, values, query).argmax(dim=-1) == answer).double().mean())
    w = model.weights(keys, values, query)  # (samples, n)
    return accuracy, float(w[torch.arange(samples), index].mean())


@torch.no_grad()
def recall_weight_matrix(model: RecallModel, pairs: int, seed: int = 5) -> torch.Tensor:
    """Every stored key of one sequence used as the query in turn: the (n, n) weight matrix whose
    diagonal is the weight on the right pair."""
    keys, values, _, _, _ = recall_batch(1, pairs, torch.Generator().manual_seed(seed))
    rows = [model.weights(keys, values, keys[:, j])[0] for j in range(pairs)]
    return torch.stack(rows)  # (n, n)


# ------------------------------------------------------------------ copy


COPY_VOCAB = 10  # token 0 separates the two halves


def copy_batches(length: int, batch_size: int = 32):
    """A ``batches(generator)`` for ``train_lm``: length random tokens (1..9), the separator 0,
    the same tokens again; (B, 2 length + 1)."""

    def batches(g):
        x = torch.randint(1, COPY_VOCAB, (batch_size, length), generator=g)  # (B, n)
        return torch.cat([x, torch.zeros(batch_size, 1, dtype=torch.long), x], dim=1)

    return batches


def copy_model(kind: str, length: int, seed: int) -> TinyLM:
    torch.manual_seed(seed)
    return TinyLM(COPY_VOCAB, 2 * length, d=32, heads=2, layers=1, attention=kind)


def train_copy(kind: str, length: int = 8, steps: int = 250, seed: int = 0, progress=True):
    """A one-layer model of ``kind`` trained to copy (Katharopoulos et al. 2020, §4.1, shrunk):
    returns (model, losses)."""
    model = copy_model(kind, length, seed)
    losses = train_lm(
        model,
        copy_batches(length),
        steps,
        lr=3e-3,
        first_target=length,
        seed=seed,
        progress=progress,
        desc=f"copy, {kind}",
    )
    return model, losses


@torch.no_grad()
def copy_accuracy(model: TinyLM, length: int, samples: int = 1000, seed: int = 999) -> float:
    """Fraction of copied tokens predicted right on fresh sequences."""
    x = copy_batches(length, samples)(torch.Generator().manual_seed(seed))
    logits, _ = model(x[:, :-1])  # (B, 2n, V)
    return float((logits[:, length:].argmax(dim=-1) == x[:, length + 1 :]).double().mean())


def steps_to_loss(losses, threshold: float = 0.05, window: int = 10) -> int | None:
    """First step after which the mean loss over ``window`` steps stays below ``threshold``."""
    for t in range(len(losses) - window + 1):
        if sum(losses[t : t + window]) / window < threshold:
            return t
    return None
