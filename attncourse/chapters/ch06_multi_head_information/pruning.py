"""Head importance and pruning orders on a trained ``HeadGatedEncoder``.

* ``michel_importance``: I_h = E_x |∂L(x)/∂ξ_h| at ξ = 1, normalised per layer (ℓ2), as Michel
  et al. 2019 (§4.1–4.2); one backward pass gives every example's gradient (one gate per example);
* ``ablation_scores``: single-head ablation, the rise of the cross-entropy when head h alone is
  removed and every other weight is kept (Michel et al.'s oracle): how much the trained network
  relies on the head. It is not Alg. 14.3.1's marginal information I(Z_all; Y) − I(Z_−h; Y):
  H(Y) − CE only bounds an information from below, and without refitting the decoder the
  difference of two such bounds bounds nothing (the chapter's appendix shows a toy where the
  loss rises while the conditional information is 0);
* ``information_scores``: App. 14.3.1's net_h = I(Z_h; Y) − Σ_{h'≠h} I(Z_h; Z_h'), with the
  k-means plug-in estimator of ``estimators``;
* ``pruning_curve``: accuracy and loss after removing the heads of an order one by one;
* ``prune_all``: the orders of the chapter (Michel, ablation, net information, random) for one
  model.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...losses import cross_entropy
from ...threads import single_thread
from .estimators import kmeans_codes, plugin_mutual_information
from .heads import HeadGatedEncoder, evaluate, evaluate_masks

# the pruning orders, by name (the keys of ``PruningResult.orders`` and ``.accuracy``)
MICHEL = "Michel et al."
ABLATION = "single-head ablation"
NET_INFORMATION = "net information"


def michel_importance(
    model: HeadGatedEncoder, x: torch.Tensor, y: torch.Tensor, normalise: bool = True
) -> torch.Tensor:
    """I_h = mean over examples of |∂L(x)/∂ξ_h| at ξ = 1 (Michel et al. 2019, Eq. 2): (L, H).

    L(x) is an example's mean cross-entropy over its positions. Each example gets its own gates
    (B, L, H), so one backward pass of the summed loss yields every per-example gradient.
    ``normalise``: divide each layer's scores by their ℓ2 norm, as the paper does."""
    B = x.shape[0]
    dtype = model.readout.weight.dtype
    gates = torch.ones(B, model.num_layers, model.num_heads, dtype=dtype, requires_grad=True)
    per_example = cross_entropy(model(x, gates), y, reduction="none").mean(1)  # (B,)
    (grad,) = torch.autograd.grad(per_example.sum(), gates)  # (B, L, H) = dL(x_b)/dxi
    importance = grad.abs().mean(0)  # (L, H)
    return importance / importance.norm(dim=1, keepdim=True) if normalise else importance


@dataclass
class InformationScores:
    """Estimated I(Z_h; Y) (direct), I(Z_h; Z_h') (pairs) and net_h (App. 14.3.1), in bits,
    heads numbered layer by layer (index = layer · H + head)."""

    direct: torch.Tensor  # (L·H,)
    pairs: torch.Tensor  # (L·H, L·H), zero diagonal
    net: torch.Tensor  # (L·H,) direct − pairs.sum(1)


@torch.no_grad()
def information_scores(
    model: HeadGatedEncoder, x: torch.Tensor, y: torch.Tensor, num_cells: int = 16
) -> InformationScores:
    """App. 14.3.1 with the k-means plug-in estimator: every head's output z_h at every position,
    quantised into ``num_cells`` cells, against the target at that position and against each
    other head's cell at the same position."""
    model(x)
    outputs = [z for layer in model.head_outputs for z in layer.unbind(1)]  # each (B, T, d_h)
    codes = [
        kmeans_codes(z.reshape(-1, z.shape[-1]), num_cells, seed=i) for i, z in enumerate(outputs)
    ]
    target = y.reshape(-1)  # (B·T,)
    direct = torch.tensor(
        [plugin_mutual_information(c, target) for c in codes], dtype=torch.float64
    )
    n = len(codes)
    pairs = torch.zeros(n, n, dtype=torch.float64)
    for i in range(n):
        for j in range(i + 1, n):
            pairs[i, j] = pairs[j, i] = plugin_mutual_information(codes[i], codes[j])
    return InformationScores(direct, pairs, direct - pairs.sum(1))


@torch.no_grad()
def ablation_scores(model: HeadGatedEncoder, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Single-head ablation: (CE with head h alone removed − CE with every head), in nats, the
    other weights fixed: (L, H). One evaluation per head; a large value means the trained
    network relies on the head (not that the head carries information no other head has)."""
    L, H = model.num_layers, model.num_heads
    _, full = evaluate(model, x, y)
    masks = 1.0 - torch.eye(L * H)  # row h removes head h alone: (L·H, L·H)
    _, loss = evaluate_masks(model, x, y, masks.view(L * H, L, H))  # (L·H,)
    out = loss - full
    return out.view(L, H)


@torch.no_grad()
def pruning_curve(model: HeadGatedEncoder, order, x: torch.Tensor, y: torch.Tensor):
    """(accuracy, loss) tensors (L·H + 1,) after removing the first k heads of ``order``
    (flat indices layer · H + head), k = 0 .. L·H."""
    L, H = model.num_layers, model.num_heads
    masks = torch.ones(L * H + 1, L * H)  # row k: the first k heads of the order removed
    for k, head in enumerate(order, start=1):
        masks[k:, int(head)] = 0.0
    return evaluate_masks(model, x, y, masks.view(-1, L, H))


def order_by(scores: torch.Tensor) -> list[int]:
    """Flat head indices from the smallest score to the largest (the pruning order)."""
    return scores.flatten().argsort(stable=True).tolist()


@dataclass
class PruningResult:
    """Everything the chapter shows about pruning one trained model."""

    importance: torch.Tensor  # (L, H) Michel et al.'s I_h, layer-normalised
    information: InformationScores
    ablation: torch.Tensor  # (L, H) the rise of the cross-entropy (nats) when one head goes
    orders: dict  # name -> list of flat head indices
    accuracy: dict  # name -> (L·H + 1,); "random" is the mean over the random orders
    loss: dict
    random_accuracy: torch.Tensor  # (num_random, L·H + 1)


@single_thread()
def prune_all(
    model: HeadGatedEncoder,
    score_data: tuple,
    eval_data: tuple,
    num_random: int = 10,
    seed: int = 0,
) -> PruningResult:
    """Michel et al.'s order, the single-head ablation order, App. 14.3.1's net-information order
    and ``num_random`` random orders, all scored on ``score_data`` (x, y) and evaluated on a
    separate ``eval_data`` (x, y)."""
    model.eval()
    importance = michel_importance(model, *score_data)
    info = information_scores(model, *score_data)
    ablation = ablation_scores(model, *score_data)
    orders = {
        MICHEL: order_by(importance),
        ABLATION: order_by(ablation),
        NET_INFORMATION: order_by(info.net),
    }
    accuracy, loss = {}, {}
    for name, order in orders.items():
        accuracy[name], loss[name] = pruning_curve(model, order, *eval_data)
    g = torch.Generator().manual_seed(seed)
    n = model.num_layers * model.num_heads
    runs = [
        pruning_curve(model, torch.randperm(n, generator=g).tolist(), *eval_data)
        for _ in range(num_random)
    ]
    random_accuracy = torch.stack([a for a, _ in runs])  # (num_random, n + 1)
    accuracy["random"] = random_accuracy.mean(0)
    loss["random"] = torch.stack([curve for _, curve in runs]).mean(0)
    return PruningResult(importance, info, ablation, orders, accuracy, loss, random_accuracy)
