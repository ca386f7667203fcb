"""The majority task and the entropy-collapse experiment of chapter 03 (Zhai et al. 2023)."""

import math

import pytest
import torch

from attncourse.chapters.ch03_entropy_and_temperature import (
    CLS,
    MajorityTransformer,
    layer_entropies,
    majority_batch,
    qk_spectral_norms,
    train_majority,
)
from attncourse.reparam import sigma_reparam


def test_majority_batch_labels_the_majority_without_ties():
    tokens, labels = majority_batch(500, 32, torch.Generator().manual_seed(0))
    assert tokens.shape == (500, 33) and (tokens[:, 0] == CLS).all()
    bits = tokens[:, 1:]
    assert ((bits == 0) | (bits == 1)).all()
    ones = bits.sum(-1)
    assert (ones != 16).all()  # ties removed
    assert torch.equal(labels, (ones > 16).long())
    assert 0.35 < labels.float().mean() < 0.65
    again, _ = majority_batch(500, 32, torch.Generator().manual_seed(0))
    assert torch.equal(tokens, again)
    _, odd = majority_batch(50, 7, torch.Generator().manual_seed(1))
    assert set(odd.tolist()) <= {0, 1}


def test_uniform_attention_makes_the_cls_output_the_fraction_of_ones():
    """Why diffuse attention is right: averaged over the bits, a value that is 1 for a one and 0 for
    a zero gives exactly the fraction of ones, which decides the label."""
    tokens, labels = majority_batch(200, 32, torch.Generator().manual_seed(2))
    values = (tokens[:, 1:] == 1).double()  # (B, 32)
    uniform = torch.full((32,), 1 / 32, dtype=torch.float64)
    fraction = values @ uniform
    assert torch.equal((fraction > 0.5).long(), labels)


def test_model_returns_logits_and_per_layer_attention_distributions():
    torch.manual_seed(0)
    model = MajorityTransformer(n_bits=8, d_model=16, num_layers=3, dim_feedforward=32)
    tokens, _ = majority_batch(4, 8)
    logits, weights = model(tokens)
    assert logits.shape == (4, 2) and len(weights) == 3
    for w in weights:
        assert w.shape == (4, 1, 9, 9) and torch.allclose(w.sum(-1), torch.ones(4, 1, 9))
    ents = layer_entropies(weights)
    assert len(ents) == 3 and all(0 < h <= math.log(9) for h in ents)
    w0 = weights[0].detach()
    assert ents[0] == pytest.approx(float(-(w0 * w0.log()).sum(-1).mean()), rel=1e-5)


def test_qk_spectral_norms_of_plain_and_reparametrised_models():
    torch.manual_seed(0)
    model = MajorityTransformer(d_model=16, num_layers=2, dim_feedforward=32)
    attn = model.blocks[1].attn
    direct = (
        float(
            torch.linalg.matrix_norm(
                attn.q_proj.weight.detach().T @ attn.k_proj.weight.detach(), ord=2
            )
        )
        / 4
    )
    assert qk_spectral_norms(model)[1] == pytest.approx(direct, rel=1e-5)
    sigma_reparam(model)
    # Ŵ_Q and Ŵ_K have spectral norm 1, so their product has norm at most 1 (divided by √16)
    assert all(0 < x <= 0.25 + 1e-4 for x in qk_spectral_norms(model))


def test_training_restores_the_thread_count():
    torch.set_num_threads(2)
    train_majority(steps=2, batch=8, eval_size=16, progress=False)
    assert torch.get_num_threads() == 2


def test_entropy_collapses_at_a_high_learning_rate_and_sigma_reparam_prevents_it():
    """The chapter's reproduction, on another seed than the notebook's (seed 1)."""
    base = train_majority(False, seed=1, progress=False)
    reparam = train_majority(True, seed=1, progress=False)
    assert base.min_entropy < 1.0 and base.eval_loss > 0.4, (base.eval_entropies, base.eval_loss)
    assert reparam.min_entropy > 2.0 and reparam.eval_loss < 0.1, (
        reparam.eval_entropies,
        reparam.eval_loss,
    )
    assert len(base.losses) == 120 and len(base.entropies[0]) == 2
    assert max(base.qk_norms) > 10 * max(reparam.qk_norms)
