"""Training the chapter-02 models: ``train_seq2seq`` (with a progress bar) and the chapter's
models, their sizes and schedule (``CHAPTER_*``), and the shipped float16 weights
(``attncourse/weights/ch02_seq2seq.pt``, made by ``scripts/train_ch02.py``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import torch

from ...losses import cross_entropy
from ...threads import single_thread
from .data import TASKS, length_schedule, make_batch
from .model import Seq2Seq, chapter_model

# ------------------------------------------------------------------------------ training


class TrainingLog(NamedTuple):
    losses: list
    lengths: list
    seconds: float


def train_seq2seq(
    model: Seq2Seq,
    task: str = "copy",
    steps: int = 300,
    lr: float = 1e-2,
    batch_size: int = 64,
    min_length: int = 5,
    max_length: int = 30,
    clip: float = 1.0,
    seed: int = 0,
    final_lr_fraction: float = 1.0,
    progress: bool = True,
    desc: str | None = None,
) -> TrainingLog:
    """Adam on the teacher-forced cross-entropy, one random length per batch (uniform on
    min_length..max_length), gradient-norm clipping at ``clip``. Shows a tqdm progress bar.

    The learning rate follows a cosine from ``lr`` down to ``final_lr_fraction * lr`` (constant
    at 1.0). Data come from a private generator seeded by ``seed``; runs single-threaded.
    Returns (losses per step, lengths per step, seconds).
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
        bar = tqdm(
            lengths, desc=desc or f"{model.kind} on {task}", disable=not progress, mininterval=0.5
        )
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
    return TrainingLog(losses, lengths, time.perf_counter() - start)


# ----------------------------------------------------------------------- the chapter's models

#: sizes of every chapter model: 20 tokens, embeddings 16, encoder 16 units per direction (keys
#: and the fixed context C have 32 features), decoder 32 units
CHAPTER_SIZES = {"num_tokens": 20, "emb_dim": 16, "enc_hidden": 16}
#: how ``scripts/train_ch02.py`` trains them (Bahdanau et al. trained on sentences of up to 30
#: or 50 words)
CHAPTER_TRAINING = {
    "steps": 1500,
    "lr": 5e-3,
    "final_lr_fraction": 0.05,
    "batch_size": 64,
    "min_length": 5,
    "max_length": 30,
    "clip": 1.0,
}
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
    # source 003's "attention beats a larger hidden size": the fixed context with twice the units
    "none, wide": ("none", "copy", 0),
    "none, wide, seed 1": ("none", "copy", 1),
    # one-to-many and many-to-one alignments (source 003), two seeds each
    "general, duplicate": ("general", "duplicate", 0),
    "general, duplicate, seed 1": ("general", "duplicate", 1),
    "general, merge": ("general", "merge", 0),
    "general, merge, seed 1": ("general", "merge", 1),
}
#: per-model changes to CHAPTER_SIZES: the wide fixed-context models have twice the units
#: (encoder 32 per direction, so C has 64 features; decoder 64)
CHAPTER_MODEL_SIZES = {
    "none, wide": {"enc_hidden": 32},
    "none, wide, seed 1": {"enc_hidden": 32},
}
#: per-model changes to CHAPTER_TRAINING: the dot score, with no learned map, needs longer; the
#: wide models get twice the steps of the attention models too (so that under-training cannot
#: explain a loss); merge must also learn addition modulo V (1,500 steps leave one seed at about
#: 45 %); duplicate's targets are twice as long as its sources (sources of 5-15 tokens)
CHAPTER_OVERRIDES = {
    "dot": {"steps": 3000},
    "none, wide": {"steps": 3000},
    "none, wide, seed 1": {"steps": 3000},
    "general, duplicate": {"max_length": 15},
    "general, duplicate, seed 1": {"max_length": 15},
    "general, merge": {"steps": 3000},
    "general, merge, seed 1": {"steps": 3000},
}
WEIGHTS_PATH = Path(__file__).resolve().parents[2] / "weights" / "ch02_seq2seq.pt"


def chapter_sizes(name: str) -> dict:
    """The sizes of chapter model ``name``: ``CHAPTER_SIZES`` with its ``CHAPTER_MODEL_SIZES``."""
    return {**CHAPTER_SIZES, **CHAPTER_MODEL_SIZES.get(name, {})}


def train_chapter_models(
    names: Sequence[str] | None = None, progress: bool = True, **overrides
) -> dict:
    """Train the chapter's models as ``scripts/train_ch02.py`` does: {name: (model, TrainingLog)}.

    Each model uses ``CHAPTER_TRAINING`` with its ``CHAPTER_OVERRIDES``; ``overrides`` replace
    entries for every model (e.g. ``steps=100`` for a quick run).
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
        model = chapter_model(kind, seed=seed, **chapter_sizes(name))
        out[name] = (
            model,
            train_seq2seq(model, task, seed=seed, progress=progress, desc=name, **settings),
        )
    return out


def save_chapter_models(models: dict, path=WEIGHTS_PATH, info: dict | None = None) -> None:
    """Store {name: model} as float16 state dicts (half the size; decoding is unchanged, which
    ``scripts/train_ch02.py`` checks) with each model's architecture, task and ``info``."""
    payload = {
        "models": {
            name: {
                "config": dict(m.config),
                "task": CHAPTER_MODELS.get(name, (m.kind, "copy", 0))[1],
                "names": list(m.state_dict()),
                "shapes": [list(v.shape) for v in m.state_dict().values()],
                "flat": torch.cat([v.detach().flatten() for v in m.state_dict().values()]).half(),
            }
            for name, m in models.items()
        },
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
        model = Seq2Seq(**entry["config"])
        sizes = [math.prod(shape) for shape in entry["shapes"]]
        pieces = entry["flat"].float().split(sizes)
        model.load_state_dict(
            {k: v.view(shape) for k, v, shape in zip(entry["names"], pieces, entry["shapes"])}
        )
        models[name] = model.eval()
    return models


def load_chapter_info(path=WEIGHTS_PATH) -> dict:
    """What ``scripts/train_ch02.py`` recorded with the weights (settings, losses, timings)."""
    return torch.load(Path(path), weights_only=True)["info"]
