"""Time and peak memory of exact, efficient and sparse attention against the length n, each
measurement in its own process; the table the chapter's figures and widget read.

    python -m attncourse.chapters.ch10_efficient_gated_attention.costs          # print the table
    python -m attncourse.chapters.ch10_efficient_gated_attention.costs --write  # and rewrite
                                                                                 # cost_table.py
    python -m attncourse.chapters.ch10_efficient_gated_attention.costs --stages # rewrite
                                                                                 # stage_table.py

Setup: one causal forward pass (``torch.no_grad``), B = H = 1, d = 64, float32, one thread (on
a shared machine a second thread waits for a busy core at every operation, which adds
milliseconds to microsecond operations; one thread keeps the ratios between methods honest).
Memory: growth of the peak resident set (``ru_maxrss``) over a baseline taken once the inputs
exist, in a fresh process started through a shell (Linux carries ``ru_maxrss`` across fork/exec,
so a child of a large process would start at its parent's high-water mark); a small warm-up run
before the baseline keeps one-time library set-up out of the count. Time: the processor time of
the (single-threaded) process, ``time.process_time``, for the fastest of at least five runs after
that first one: on a shared machine the wall-clock time also counts the waits for a free core,
which have nothing to do with the method.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch

from ...attention import (
    block_attention,
    chunked_attention,
    linear_attention,
    local_attention,
    scaled_dot_product_attention,
    strided_attention,
)

LENGTHS = (256, 512, 1024, 2048, 4096, 8192, 16384)
SIZES = (16, 32, 64, 128, 256)  # window, stride or block size of the sparse methods
EXACT = ("plain", "chunked")  # softmax attention over every earlier key
METHODS = ("plain", "chunked", "linear", "local", "strided", "block")
SIZED = {"local": "window", "strided": "stride", "block": "block size"}
D, THREADS = 64, 1
TABLE_FILE = Path(__file__).with_name("cost_table.py")
STAGE_FILE = Path(__file__).with_name("stage_table.py")
MODULE = "attncourse.chapters.ch10_efficient_gated_attention.costs"


def attention_call(method: str, size: int):
    """The causal attention ``method`` as a function of (q, k, v) -> output."""
    calls = {
        "plain": lambda q, k, v: scaled_dot_product_attention(q, k, v, causal=True),
        "chunked": lambda q, k, v: chunked_attention(q, k, v, causal=True),
        "linear": lambda q, k, v: linear_attention(q, k, v, causal=True),
        "local": lambda q, k, v: local_attention(q, k, v, size, causal=True),
        "strided": lambda q, k, v: strided_attention(q, k, v, size, causal=True),
        "block": lambda q, k, v: block_attention(q, k, v, size, causal=True),
    }
    if method not in calls:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    call = calls[method]
    return lambda q, k, v: call(q, k, v)[0]


def load_table() -> dict:
    """The shipped measurements {(method, n, size): (forward ms, extra peak MB)}."""
    from .cost_table import TABLE

    return dict(TABLE)


def series(table: dict, method: str, size: int = 0, column: int = 0) -> list[float]:
    """One method's time (column 0, ms) or memory (column 1, MB) at every length of LENGTHS."""
    return [table[method, n, size][column] for n in LENGTHS]


def crossover(table: dict, fast: str, slow: str, column: int = 0, size: int = 0) -> int | None:
    """The shortest measured length from which ``fast`` (with ``size``) costs less than ``slow``
    at every longer measured length (time: column 0, memory: column 1); None if never."""
    a, b = series(table, fast, size, column), series(table, slow, 0, column)
    for index, n in enumerate(LENGTHS):
        if all(x < y for x, y in zip(a[index:], b[index:])):
            return n
    return None


COLORS = {
    "plain": "tab:red",
    "chunked": "tab:orange",
    "linear": "tab:purple",
    "local": "tab:green",
    "strided": "tab:olive",
    "block": "tab:cyan",
}


def plot_costs(methods, size: int = 64, table: dict | None = None, axes=None):
    """The measured time and extra peak memory of ``methods`` against n (log-log), the sparse
    ones with window, stride or block ``size``, with n² dotted for reference; returns the axes."""
    import matplotlib.pyplot as plt
    import numpy as np

    table = load_table() if table is None else table
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    ns = np.array(LENGTHS, dtype=float)
    for method in methods:
        sized = size if method in SIZED else 0
        label = f"{method} ({SIZED[method]} {size})" if sized else method
        for column, ax in enumerate(axes):
            values = series(table, method, sized, column)
            ax.loglog(ns, values, "o-", ms=3, color=COLORS[method], label=label)
    first = series(table, methods[0], size if methods[0] in SIZED else 0, 0)[-1]
    axes[0].loglog(ns, first * (ns / ns[-1]) ** 2, "k:", lw=1, label="∝ n²")
    axes[1].loglog(ns, 4 * ns**2 / 2**20, "k:", lw=1, label="n² float32 numbers")
    axes[0].set(xlabel="n", ylabel="ms", title="time of one forward pass")
    axes[1].set(xlabel="n", ylabel="MB", title="extra peak memory")
    for ax in axes:
        ax.legend(fontsize=7)
    return axes


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def measure_here(method: str, n: int, size: int = 0, min_seconds: float = 0.5):
    """(fastest ms, extra peak MB) of one forward pass, measured in this process: meaningful only
    in a fresh one (``measure``)."""
    torch.set_num_threads(THREADS)
    attend = attention_call(method, size)
    with torch.no_grad():
        attend(*(torch.randn(1, 1, 256, D) for _ in range(3)))  # one-time set-up
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(1, 1, n, D, generator=g) for _ in range(3))  # (1, 1, n, d)
        gc.collect()
        baseline = _peak_mb()
        attend(q, k, v)
        extra = _peak_mb() - baseline
        times = []
        while len(times) < 5 or (sum(times) < min_seconds and len(times) < 30):
            start = time.process_time()
            attend(q, k, v)
            times.append(time.process_time() - start)
    return 1000 * min(times), extra


def measure(method: str, n: int, size: int = 0) -> tuple[float, float]:
    """(fastest ms, extra peak MB) of ``method`` at length ``n``, in a fresh process."""
    code = f"from {MODULE} import main; main()"  # (-m would import this module twice)
    command = [sys.executable, "-c", code, "--one", method, str(n), str(size)]
    result = subprocess.run(
        ["/bin/sh", "-c", '"$0" "$@"; exit $?', *command],
        capture_output=True,
        text=True,
        check=True,
    )
    ms, mb = result.stdout.split()[:2]
    return float(ms), float(mb)


def grid():
    """Every (method, n, size) of the table: size 0 for the methods without one."""
    for n in LENGTHS:
        for method in METHODS:
            for size in SIZES if method in SIZED else (0,):
                yield method, n, size


def measure_table(progress: bool = True) -> dict:
    table = {}
    for method, n, size in grid():
        table[method, n, size] = measure(method, n, size)
        if progress:
            ms, mb = table[method, n, size]
            print(f"{method:>8} n={n:>6} size={size:>3}: {ms:9.2f} ms {mb:8.1f} MB", flush=True)
    return table


def write_table(table: dict, path: Path = TABLE_FILE) -> None:
    """Write the measurements as a Python module (formatted as ``ruff format`` would)."""
    lines = [
        '"""Measured by ``python -m attncourse.chapters.ch10_efficient_gated_attention.costs',
        '--write``: {(method, n, size): (forward ms, extra peak MB)} (see ``costs``)."""',
        "",
        f'MACHINE = "{platform.processor() or platform.machine()}"',
        f'TORCH = "{torch.__version__}"',
        f'SETUP = {{"B": 1, "H": 1, "d": {D}, "threads": {THREADS}, "dtype": "float32", '
        '"causal": True}',
        "TABLE = {",
    ]
    lines += [
        f'    ("{method}", {n}, {size}): ({ms:.3f}, {mb:.1f}),'
        for (method, n, size), (ms, mb) in table.items()
    ]
    lines.append("}")
    path.write_text("\n".join(lines) + "\n")


def load_stages() -> dict:
    """The shipped stage times of causal linear attention {n: {stage: ms}} (``--stages``)."""
    from .stage_table import STAGES

    return {n: dict(stages) for n, stages in STAGES.items()}


def write_stages(path: Path = STAGE_FILE, repeats: int = 5) -> dict:
    """Measure ``linear.causal_linear_stages`` at every length of LENGTHS, each in a fresh
    process, and write them as a Python module."""
    stages = {}
    for n in LENGTHS:
        code = (
            "from attncourse.chapters.ch10_efficient_gated_attention.linear import "
            f"causal_linear_stages as f; import json; print(json.dumps(f({n}, {D}, {repeats})))"
        )
        result = subprocess.run(
            ["/bin/sh", "-c", '"$0" "$@"; exit $?', sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
        )
        stages[n] = json.loads(result.stdout)
        print(n, {k: round(v, 1) for k, v in stages[n].items()}, flush=True)
    lines = [
        '"""Measured by ``python -m attncourse.chapters.ch10_efficient_gated_attention.costs',
        "--stages``: where causal linear attention spends its time, {n: {stage: ms}} (processor",
        'time, fastest of several runs, one thread; see ``linear.causal_linear_stages``)."""',
        "",
        f'MACHINE = "{platform.processor() or platform.machine()}"',
        f'TORCH = "{torch.__version__}"',
        f'SETUP = {{"d": {D}, "threads": 1, "dtype": "float32"}}',
        "STAGES = {",
    ]
    for n, row in stages.items():
        lines.append(f"    {n}: {{")
        lines += [f'        "{stage}": {ms:.3f},' for stage, ms in row.items()]
        lines.append("    },")
    lines.append("}")
    path.write_text("\n".join(lines) + "\n")
    return stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite cost_table.py")
    parser.add_argument(
        "--stages", action="store_true", help="measure linear attention's stages only"
    )
    parser.add_argument("--one", nargs=3, metavar=("METHOD", "N", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        ms, mb = measure_here(args.one[0], int(args.one[1]), int(args.one[2]))
        print(f"{ms:.4f} {mb:.2f}")
        return
    if args.stages:
        write_stages()
        print(f"wrote {STAGE_FILE}")
        return
    table = measure_table()
    if args.write:
        write_table(table)
        print(f"wrote {TABLE_FILE}")


if __name__ == "__main__":
    main()
