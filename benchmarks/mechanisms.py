"""Speed and memory of the course's mechanisms next to PyTorch's built-ins (CPU, float32).

    python benchmarks/mechanisms.py              # plain-text tables
    python benchmarks/mechanisms.py --markdown   # the same tables in Markdown, for the README

Speed: median time of a forward pass (under ``torch.no_grad``) and of a forward + backward
pass, with 2 threads, on (B=8, H=8, T=512, d=64) causal attention; the norms run on
(B*T=4096, 512). Ours and the built-in are timed in alternation, so load from other programs
hits both alike. The plain attention is compared twice: with F.scaled_dot_product_attention's
default kernel (FlashAttention-style: the (T, T) weights are never stored) and with its MATH
backend, which stores them as ours does.

Memory: peak extra resident memory (growth of ``ru_maxrss`` over a baseline taken after the
inputs exist) of one non-causal forward pass at B=H=1, d=64, each measured in its own
subprocess so that no earlier run has already raised the high-water mark; a small
warm-up run before the baseline keeps one-time library set-up out of the count.
"""

import argparse
import gc
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attncourse.attention.chunked import chunked_attention  # noqa: E402
from attncourse.attention.dot_product import scaled_dot_product_attention  # noqa: E402
from attncourse.attention.multihead import MultiHeadAttention  # noqa: E402
from attncourse.masks import causal_mask  # noqa: E402

THREADS = 2
B, H, T, D = 8, 8, 512, 64
NORM_ROWS, NORM_DIM = B * T, H * D  # (4096, 512)
MEMORY_LENGTHS = (4096, 16384)
TARGET_CHUNKED = 1.1  # chunked_attention / F.scaled_dot_product_attention (default kernel)
TARGET_PLAIN_VS_MATH = 1.25  # scaled_dot_product_attention / the MATH backend, fwd and fwd+bwd
TARGET_MHA = 1.3  # MultiHeadAttention / nn.MultiheadAttention, fwd and fwd+bwd
TARGET_MEMORY_FRACTION, TARGET_MEMORY_MB = 1 / 8, 100.0


# ---------------------------------------------------------------- speed


class Case:
    """One row of the speed table: ``ours`` and ``builtin`` map inputs to an output tensor;
    ``reference`` names the built-in in the table."""

    def __init__(self, name, reference, inputs, ours, builtin, params=(), atol=1e-4):
        self.name, self.reference, self.inputs = name, reference, inputs
        self.ours, self.builtin = ours, builtin
        self.params, self.atol = list(params), atol


def attention_inputs():
    q, k, v = (torch.randn(B, H, T, D, requires_grad=True) for _ in range(3))  # (B, H, T, d)
    return [q, k, v]


def builtin_sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, d)


def math_sdpa(q, k, v):
    """The built-in on its MATH backend: softmax(q k^T * scale) v with the (T, T) weights stored."""
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, d)


def plain_sdpa(q, k, v):
    return scaled_dot_product_attention(q, k, v, causal=True)[0]  # (B, H, T, d)


def attention_cases():
    inputs = attention_inputs()
    yield Case("scaled_dot_product_attention", "F.sdpa default", inputs, plain_sdpa, builtin_sdpa)
    yield Case("scaled_dot_product_attention", "F.sdpa MATH", inputs, plain_sdpa, math_sdpa)
    yield Case(
        "chunked_attention",
        "F.sdpa default",
        inputs,
        lambda q, k, v: chunked_attention(q, k, v, causal=True)[0],
        builtin_sdpa,
    )

    torch_mha = nn.MultiheadAttention(H * D, H, batch_first=True)
    ours_mha = MultiHeadAttention.from_torch(torch_mha)
    torch_mha.eval(), ours_mha.eval()  # no dropout either way; lets the built-in take its fast path
    x = torch.randn(B, T, H * D, requires_grad=True)  # (B, T, d_model)
    masked_out = ~causal_mask(T)  # (T, T) nn.MultiheadAttention's bool mask: True = may NOT attend
    yield Case(
        "MultiHeadAttention",
        "nn.MultiheadAttention",
        [x],
        lambda x: ours_mha(x, causal=True)[0],
        lambda x: torch_mha(x, x, x, attn_mask=masked_out, need_weights=False)[0],
        params=[*ours_mha.parameters(), *torch_mha.parameters()],
    )


def norm_cases():
    try:
        from attncourse.norms import LayerNorm, RMSNorm
    except ImportError as error:
        print(f"skipping LayerNorm / RMSNorm: attncourse.norms is not importable ({error})")
        return
    x = torch.randn(NORM_ROWS, NORM_DIM, requires_grad=True)  # (B*T, d_model)
    for name, ours, theirs in (
        ("LayerNorm", LayerNorm(NORM_DIM), nn.LayerNorm(NORM_DIM)),
        ("RMSNorm", RMSNorm(NORM_DIM), nn.RMSNorm(NORM_DIM)),
    ):
        ours.train(), theirs.train()
        params = [*ours.parameters(), *theirs.parameters()]
        yield Case(name, f"nn.{name}", [x], ours, theirs, params=params)


def forward_step(fn, inputs, params):
    def step():
        with torch.no_grad():
            fn(*inputs)

    return step


def forward_backward_step(fn, inputs, params):
    def step():
        out = fn(*inputs)
        torch.autograd.grad(out, inputs + params, torch.ones_like(out), allow_unused=True)

    return step


def median_ms(case, make_step, warmup, reps):
    """Median milliseconds of ours and of the built-in, timed in alternation."""
    steps = {
        "ours": make_step(case.ours, case.inputs, case.params),
        "builtin": make_step(case.builtin, case.inputs, case.params),
    }
    for _ in range(warmup):
        for step in steps.values():
            step()
    times = {name: [] for name in steps}
    for _ in range(reps):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["ours"]) * 1e3, statistics.median(times["builtin"]) * 1e3


def check_agreement(case):
    with torch.no_grad():
        ours, theirs = case.ours(*case.inputs), case.builtin(*case.inputs)
    error = (ours - theirs).abs().max().item()
    if error > case.atol:
        raise SystemExit(
            f"{case.name}: ours and {case.reference} differ by {error:.2e} (> {case.atol}); "
            "not timing it"
        )


def speed_table(reps):
    rows = []
    for case in [*attention_cases(), *norm_cases()]:
        check_agreement(case)
        # the norms take a few ms: more repetitions cost little and steady the median
        n = reps * 4 if case.name.endswith("Norm") else reps
        fwd = median_ms(case, forward_step, warmup=2, reps=n)
        fwd_bwd = median_ms(case, forward_backward_step, warmup=2, reps=n)
        rows.append(
            (case.name, case.reference, *fwd, fwd[0] / fwd[1], *fwd_bwd, fwd_bwd[0] / fwd_bwd[1])
        )
        print(f"  timed {case.name} vs {case.reference}", file=sys.stderr, flush=True)
    return rows


# ---------------------------------------------------------------- memory


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def measure(name: str, length: int) -> None:
    """Run in a fresh subprocess: print the extra peak memory (MB) of one forward pass."""
    torch.set_num_threads(THREADS)
    attention = {
        "plain": lambda q, k, v: scaled_dot_product_attention(q, k, v)[0],
        "chunked": lambda q, k, v: chunked_attention(q, k, v)[0],
    }[name]
    # a small run first: one-time BLAS/thread set-up (~40 MB) is not the algorithm's
    with torch.no_grad():
        attention(*(torch.randn(1, 1, 256, D) for _ in range(3)))
    q, k, v = (torch.randn(1, 1, length, D) for _ in range(3))  # (1, 1, T, d)
    gc.collect()
    baseline = peak_rss_mb()
    with torch.no_grad():
        out = attention(q, k, v)  # (1, 1, T, d)
    print(f"{peak_rss_mb() - baseline:.1f} {out.abs().sum().item():.3f}")


def measure_in_subprocess(name: str, length: int) -> float:
    # Linux carries ru_maxrss over fork/exec: a child started straight from this (by now large)
    # process would begin at its high-water mark. A shell that forks the child gives it a clean one.
    command = [sys.executable, __file__, "--measure", name, str(length)]
    result = subprocess.run(
        ["/bin/sh", "-c", '"$0" "$@"; exit $?', *command],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(result.stdout.split()[0])


def memory_table():
    rows = []
    for length in MEMORY_LENGTHS:
        plain, chunked = (
            measure_in_subprocess("plain", length),
            measure_in_subprocess("chunked", length),
        )
        rows.append((length, plain, chunked, plain / max(chunked, 0.1)))
        print(f"  measured T={length}", file=sys.stderr, flush=True)
    return rows


# ---------------------------------------------------------------- output


def print_table(header, rows, markdown):
    cells = [list(header)] + [
        [f"{c:.2f}" if isinstance(c, float) else str(c) for c in row] for row in rows
    ]
    if markdown:
        print("| " + " | ".join(cells[0]) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        for row in cells[1:]:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
        for n, row in enumerate(cells):
            print(
                "  ".join(
                    c.ljust(w) if i == 0 else c.rjust(w)
                    for i, (c, w) in enumerate(zip(row, widths))
                )
            )
            if n == 0:
                print("  ".join("-" * w for w in widths))
    print()


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument(
        "--reps", type=int, default=9, help="timed repetitions per attention row (default 9)"
    )
    parser.add_argument("--measure", nargs=2, metavar=("NAME", "T"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure[0], int(args.measure[1]))
        return

    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, CPU. Attention: "
        f"B={B}, H={H}, T={T}, d={D}, causal; norms: ({NORM_ROWS}, {NORM_DIM}). "
        f"Median of {args.reps} runs (norms {args.reps * 4}); F.sdpa is "
        f"F.scaled_dot_product_attention on its default kernel or on the MATH backend, "
        f"nn.MultiheadAttention runs with need_weights=False.\n"
    )
    speed = speed_table(args.reps)
    header = (
        "mechanism",
        "built-in",
        "ours fwd ms",
        "built-in fwd ms",
        "ratio",
        "ours fwd+bwd ms",
        "built-in fwd+bwd ms",
        "ratio",
    )
    print_table(header, speed, args.markdown)

    print("Peak extra memory of one forward pass (B=H=1, d=64, non-causal, torch.no_grad):\n")
    memory = memory_table()
    print_table(("T", "plain MB", "chunked MB", "plain / chunked"), memory, args.markdown)

    # (mechanism, built-in) -> (fwd ratio, fwd+bwd ratio), ours / built-in
    ratios = {(row[0], row[1]): (row[4], row[7]) for row in speed}
    memory_mb = {length: (plain, chunked) for length, plain, chunked, _ in memory}
    fraction_4096 = memory_mb[4096][1] / memory_mb[4096][0]  # chunked / plain
    checks = []
    for label, key, limit in (
        (
            "plain / MATH backend",
            ("scaled_dot_product_attention", "F.sdpa MATH"),
            TARGET_PLAIN_VS_MATH,
        ),
        (
            "MultiHeadAttention / nn.MultiheadAttention",
            ("MultiHeadAttention", "nn.MultiheadAttention"),
            TARGET_MHA,
        ),
        ("chunked / default kernel", ("chunked_attention", "F.sdpa default"), TARGET_CHUNKED),
    ):
        for step, ratio in zip(("fwd", "fwd+bwd"), ratios[key]):
            checks.append((f"{label} {step} <= {limit}", ratio, ratio <= limit))
    checks += [
        (
            "chunked / plain memory at T=4096 <= 1/8",
            f"{fraction_4096:.4f}",
            fraction_4096 <= TARGET_MEMORY_FRACTION,
        ),
        (
            f"chunked MB at T=16384 < {TARGET_MEMORY_MB:.0f}",
            memory_mb[16384][1],
            memory_mb[16384][1] < TARGET_MEMORY_MB,
        ),
    ]
    rows = [(target, measured, "yes" if holds else "NO") for target, measured, holds in checks]
    print_table(("target", "measured", "holds"), rows, args.markdown)


if __name__ == "__main__":
    main()
