"""Train chapter 02's encoder-decoder models and store them in attncourse/weights/ch02_seq2seq.pt.

    python scripts/train_ch02.py                 # all models, the settings of CHAPTER_TRAINING
    python scripts/train_ch02.py --steps 100 --out /tmp/quick.pt

Deterministic: every model's initialisation and training data come from its own seed, and training
runs on one CPU thread, so a rerun writes the same weights. The models are stored in float16; the
script checks that greedy decoding gives the same accuracy as in float32 before it writes them.
"""

from __future__ import annotations

import argparse
import platform
import time

import torch

from attncourse.chapters.ch02_seq2seq_bottleneck import (
    CHAPTER_MODEL_SIZES,
    CHAPTER_MODELS,
    CHAPTER_OVERRIDES,
    CHAPTER_SIZES,
    CHAPTER_TRAINING,
    WEIGHTS_PATH,
    Seq2Seq,
    accuracy_by_length,
    save_chapter_models,
    train_chapter_models,
)

LENGTHS = (5, 10, 15, 20, 25, 30)
#: source lengths checked per task (duplicate writes two tokens per source token)
TASK_LENGTHS = {"duplicate": (5, 10, 15)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(WEIGHTS_PATH), help="where to write the weights")
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="training steps for every model (default: CHAPTER_TRAINING and CHAPTER_OVERRIDES)",
    )
    parser.add_argument(
        "--only", nargs="*", default=None, choices=list(CHAPTER_MODELS), help="train only these"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    start = time.perf_counter()
    quick = {} if args.steps is None else {"steps": args.steps}
    trained = train_chapter_models(args.only, progress=not args.no_progress, **quick)
    info = {
        "training": {**CHAPTER_TRAINING, **quick},
        "overrides": {} if quick else {k: dict(v) for k, v in CHAPTER_OVERRIDES.items()},
        "sizes": dict(CHAPTER_SIZES),
        "model_sizes": {k: dict(v) for k, v in CHAPTER_MODEL_SIZES.items()},
        "torch": str(torch.__version__),
        "python": platform.python_version(),
        "seconds": {},
        "final_loss": {},
        "accuracy": {},
        "lengths": {},
    }
    models = {}
    for name, (model, result) in trained.items():
        kind, task, _ = CHAPTER_MODELS[name]
        half = Seq2Seq(**model.config)
        half.load_state_dict({k: v.half().float() for k, v in model.state_dict().items()})
        lengths = TASK_LENGTHS.get(task, LENGTHS)
        acc32 = accuracy_by_length(model, task, lengths)
        acc16 = accuracy_by_length(half, task, lengths)
        worst = float((acc32 - acc16).abs().max())
        if worst > 0.02:
            raise SystemExit(
                f"{name}: float16 weights change the accuracy by {worst:.3f}; not written"
            )
        info["seconds"][name] = round(result.seconds, 1)
        info["final_loss"][name] = round(sum(result.losses[-50:]) / len(result.losses[-50:]), 4)
        info["accuracy"][name] = [round(a, 3) for a in acc16.tolist()]
        info["lengths"][name] = list(lengths)
        print(
            f"{name:>18} ({task}): {result.seconds:6.1f} s, "
            f"loss {info['final_loss'][name]:.4f}, accuracy at "
            + " ".join(f"{n}:{a:.3f}" for n, a in zip(lengths, acc16.tolist())),
            flush=True,
        )
        models[name] = model
    info["total_seconds"] = round(time.perf_counter() - start, 1)
    save_chapter_models(models, args.out, info)
    print(f"wrote {args.out} ({len(models)} models, {info['total_seconds']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
