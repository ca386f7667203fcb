"""Time every chapter notebook top to bottom, and every widget's update, against the budgets.

    python benchmarks/notebooks.py                  # all notebooks/NN_*.ipynb and all widgets
    python benchmarks/notebooks.py 01               # notebooks whose name starts with 01
    python benchmarks/notebooks.py --widgets-only   # skip the notebook runs
    python benchmarks/notebooks.py --markdown       # the tables in Markdown, for the README

Notebooks: executed in memory with nbclient (nothing is written back), in a fresh kernel each,
with the notebook's own first cell setting 2 threads; the time is the wall time from kernel
start to the last cell. Budget 60 s each on the 2-core reference machine. The kernel's peak
resident memory (VmHWM, Linux) is what sizes a student's server (deploy/z2jh/values.yaml).

Widgets: the plain update function behind each widget (compute + redraw + encoding the image)
on the Agg backend, timed over many slider positions after one warm-up call; median and 95th
percentile. Budget 100 ms median. The ``via slider`` row sets the ipywidgets slider value, so it
also includes the trait machinery and the observer callback (the browser's transfer is not
included). Exit status 1 if any budget is exceeded.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NOTEBOOK_BUDGET_S = 60.0
WIDGET_BUDGET_MS = 100.0
THREADS = 2


def _peak_mb(pid: int) -> float:
    """The peak resident memory of process ``pid`` so far (Linux's VmHWM), in MB; 0 elsewhere."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    kb = next((line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")), 0)
    return int(kb) / 1024


def time_notebook(path: Path, timeout: int = 600) -> tuple[float, float]:
    """Wall time of executing ``path`` top to bottom in a fresh kernel (seconds), and the
    kernel's peak resident memory (MB: what a student's server needs for this chapter)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    peak = [0.0]

    def record(**_):
        process = getattr(client.km.provisioner, "process", None)
        if process is not None:
            peak[0] = max(peak[0], _peak_mb(process.pid))

    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        on_cell_executed=record,
    )
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start, peak[0]


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def time_calls(fn, arguments, warmup: int = 1):
    """Median and 95th percentile (ms) of fn(*a) over ``arguments``, after ``warmup`` calls."""
    for a in arguments[:warmup]:
        fn(*a)
    times = []
    for a in arguments:
        start = time.perf_counter()
        fn(*a)
        times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times), percentile(times, 0.95), len(times)


def widget_rows(calls: int):
    """(name, median ms, p95 ms, calls) for every widget of the course."""
    import matplotlib
    import torch

    matplotlib.use("Agg")  # this process only: the notebooks timed above keep their inline backend

    torch.set_num_threads(THREADS)
    from attncourse.chapters.ch00_how_to_use import temperature_bars
    from attncourse.chapters.ch01_attention_as_selection import (
        SelectionPlot,
        selection_widget,
        selection_widget_update,
    )

    rows = []
    # chapter 01: query over fixed keys -> weights, entropy, output point (compute + blit + PNG)
    plot = SelectionPlot()
    start = time.perf_counter()
    selection_widget_update(plot, 0.0, 1.0)
    first_ms = 1000 * (time.perf_counter() - start)
    moves = [
        (
            -180.0 + (7.3 * i) % 360,
            0.2 + (i % 29) * 0.2,
            10 ** (-1.3 + 2.6 * ((i * 0.37) % 1)),
            i % 5 != 0,
        )
        for i in range(calls)
    ]
    rows.append(
        (
            "01 query selection: selection_widget_update",
            *time_calls(lambda *m: selection_widget_update(plot, *m), moves, warmup=0),
        )
    )
    box = selection_widget()
    slider = box.controls["angle_deg"]
    angles = [(-180.0 + (5.0 * i) % 360,) for i in range(calls)]
    rows.append(
        (
            "01 query selection: via slider",
            *time_calls(lambda a: setattr(slider, "value", a), angles),
        )
    )
    # chapter 00: temperature slider -> softmax bars (HTML text)
    temps = [(10 ** (-1 + 2 * ((i * 0.37) % 1)),) for i in range(calls)]
    scores = torch.tensor([2.0, 1.0, 0.5, -1.0])
    rows.append(
        (
            "00 temperature bars: temperature_bars",
            *time_calls(lambda t: temperature_bars(scores, t), temps),
        )
    )
    # chapter 02: model, example, step -> the alignment row of a precomputed greedy decoding
    from attncourse.chapters.ch02_seq2seq_bottleneck import (
        DecodingPlot,
        decoding_traces,
        decoding_widget_update,
        load_chapter_models,
        make_batch,
    )

    chapter_models = load_chapter_models(names=["none", "additive", "local-m"])
    sources, _ = make_batch("copy", 4, 16, 20, torch.Generator().manual_seed(0))
    traces = decoding_traces(chapter_models, "copy", sources)
    decoding_plot = DecodingPlot(16)
    settings = [(("none", "additive", "local-m")[i % 3], i % 4, (i * 5) % 16) for i in range(calls)]
    rows.append(
        (
            "02 seq2seq decoding: decoding_widget_update",
            *time_calls(lambda *a: decoding_widget_update(decoding_plot, traces, *a), settings),
        )
    )
    # chapter 03: scores pattern, temperature, d_k, n -> distribution, entropy with bounds,
    # Jacobian norm
    from attncourse.chapters.ch03_entropy_and_temperature import (
        PATTERNS,
        EntropyPlot,
        entropy_widget_update,
    )

    entropy_plot = EntropyPlot()
    settings = [
        (
            PATTERNS[i % len(PATTERNS)],
            10 ** (-1 + 2 * ((i * 0.37) % 1)),
            2 ** (2 + i % 8),
            4 + i % 29,
        )
        for i in range(calls)
    ]
    rows.append(
        (
            "03 entropy and temperature: entropy_widget_update",
            *time_calls(lambda *a: entropy_widget_update(entropy_plot, *a), settings),
        )
    )
    # chapter 04: spectral radius, nonlinearity, length -> gradient norm vs distance,
    # RNN and attention
    from attncourse.chapters.ch04_gradient_paths import GradientPathPlot, gradient_widget_update

    gradient_plot = GradientPathPlot()
    settings = [
        (0.5 + (i * 0.013) % 1.0, ("tanh", "linear")[i % 2], 20 + (i * 7) % 180)
        for i in range(calls)
    ]
    rows.append(
        (
            "04 gradient paths: gradient_widget_update",
            *time_calls(lambda *a: gradient_widget_update(gradient_plot, *a), settings),
        )
    )
    # chapter 05: mask, layer, head, query -> heat map, flow graph, shares, raw vs rollout of a
    # 3-layer encoder (untrained here: the update's cost does not depend on the weights)
    from attncourse.chapters.ch05_information_flow import (
        MASK_KINDS,
        FlowPlot,
        TinyTransformer,
        flow_views,
        flow_widget_update,
        palindrome_batch,
    )

    torch.manual_seed(0)
    encoder = TinyTransformer(17, 32, 2, 3, 16)
    flow_tokens, _, _ = palindrome_batch(1, torch.Generator().manual_seed(9), masks=1)
    views = flow_views(encoder, flow_tokens)
    flow_plot = FlowPlot(16)
    settings = [
        (MASK_KINDS[i % 6], 1 + (i // 6) % 3, ("1", "2", "mean")[i % 3], (i * 5) % 16)
        for i in range(calls)
    ]
    rows.append(
        (
            "05 information flow: flow_widget_update",
            *time_calls(lambda *a: flow_widget_update(flow_plot, views, *a), settings),
        )
    )
    # chapter 06: head toggles, pruning order, k -> accuracy, loss and every head's pattern of the
    # 2 x 16-head sort model (untrained here, stand-in curves: the cost does not depend on them)
    from attncourse.chapters.ch06_multi_head_information import (
        HeadMaskPlot,
        chapter_model,
        head_mask_widget_update,
        sort_batch,
    )

    head_model = chapter_model(0).eval()
    head_data = sort_batch(128, torch.Generator().manual_seed(8))  # the notebook's eval_data
    stand_in = {"Michel et al.": torch.linspace(1, 0.25, 33), "random": torch.linspace(1, 0.2, 33)}
    head_plot = HeadMaskPlot(2, 16, 8, stand_in)
    head_order = torch.randperm(32, generator=torch.Generator().manual_seed(0)).tolist()
    settings = [([((i // 3) % 2, (i * 5) % 16)], head_order, i % 20) for i in range(calls)]
    rows.append(
        (
            "06 multi-head information: head_mask_widget_update",
            *time_calls(
                lambda *a: head_mask_widget_update(head_plot, head_model, head_data, *a), settings
            ),
        )
    )
    # chapter 07: encoding, dimension, position, RoPE plane -> heatmap, similarity vs offset,
    # RoPE rotation, ALiBi bias rows
    from attncourse.chapters.ch07_positional_encoding import (
        WIDGET_ENCODINGS,
        EncodingPlot,
        encoding_widget_update,
    )

    encoding_plot = EncodingPlot()
    settings = [
        (WIDGET_ENCODINGS[i % 4], 2 + 2 * ((i * 13) % 64), (i * 7) % 64, i % 9)
        for i in range(calls)
    ]
    rows.append(
        (
            "07 positional encoding: encoding_widget_update",
            *time_calls(lambda *a: encoding_widget_update(encoding_plot, *a), settings),
        )
    )
    # chapter 08: layer kind, depth, normalization, gate bias -> per-layer statistics of a
    # fresh stack
    from attncourse.chapters.ch08_residual_highway_normalization import (
        LAYER_KINDS,
        NORM_TYPES,
        DepthPlot,
        depth_widget_update,
    )

    depth_plot = DepthPlot()
    settings = [
        (LAYER_KINDS[i % 3], 1 + (i * 37) % 100, NORM_TYPES[(i // 3) % 4], -6.0 + (i % 7))
        for i in range(calls)
    ]
    rows.append(
        (
            "08 residual, highway, norm: depth_widget_update",
            *time_calls(lambda *a: depth_widget_update(depth_plot, *a), settings),
        )
    )
    # chapter 09: placement, depth, lr, warm-up -> curves of a precomputed run
    # (stand-in curves here: the update's cost does not depend on their values)
    import numpy as np

    from attncourse.chapters.ch09_pre_ln_vs_post_ln import (
        Run,
        StabilityPlot,
        stability_widget_update,
    )

    rng = np.random.default_rng(0)
    grid = [
        (norm, depth, lr, warm)
        for norm in ("post", "pre", "deepnorm")
        for depth in (2, 6)
        for lr in (1e-3, 1e-2)
        for warm in (0, 50)
    ]
    runs = {key: [Run(*key, 0, rng.random(150) * 3, rng.random(150))] for key in grid}
    stability_plot = StabilityPlot(runs)
    cells = [grid[i % len(grid)] for i in range(calls)]
    settings = [
        (("all", norm)[i % 2], depth, lr, warm) for i, (norm, depth, lr, warm) in enumerate(cells)
    ]
    rows.append(
        (
            "09 Pre-LN vs Post-LN: stability_widget_update",
            *time_calls(lambda *a: stability_widget_update(stability_plot, *a), settings),
        )
    )
    # chapter 10: length, sparse pattern, window / stride / block size -> mask corner, reach of
    # the last query through layers, measured time and memory bars (from the shipped table)
    from attncourse.chapters.ch10_efficient_gated_attention import (
        LENGTHS,
        SIZES,
        SparsityPlot,
        sparsity_widget_update,
    )

    sparsity_plot = SparsityPlot()
    settings = [
        (
            LENGTHS[i % 7],
            ("local", "strided", "block")[i % 3],
            *(SIZES[(i + j) % 5] for j in (0, 1, 2)),
        )
        for i in range(calls)
    ]
    rows.append(
        (
            "10 efficient and sparse attention: sparsity_widget_update",
            *time_calls(lambda *a: sparsity_widget_update(sparsity_plot, *a), settings),
        )
    )
    return rows, first_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "prefixes", nargs="*", help="only notebooks whose file name starts with one of these"
    )
    parser.add_argument("--widgets-only", action="store_true", help="time the widgets only")
    parser.add_argument(
        "--calls", type=int, default=200, help="widget updates to time (default 200)"
    )
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = parser.parse_args()

    over = []
    md = args.markdown
    sep = " | " if md else "  "

    def line(*cells, widths):
        text = sep.join(
            f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(cells, widths))
        )
        return f"| {text} |" if md else text

    if not args.widgets_only:
        paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
        if args.prefixes:
            paths = [p for p in paths if any(p.name.startswith(x) for x in args.prefixes)]
        widths = (40, 10, 10, 7, 14)
        print(line("notebook", "time (s)", "budget", "", "kernel peak MB", widths=widths))
        if md:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        for path in paths:
            seconds, peak_mb = time_notebook(path)
            ok = seconds <= NOTEBOOK_BUDGET_S
            over += [] if ok else [path.name]
            print(
                line(
                    path.name,
                    f"{seconds:.1f}",
                    f"{NOTEBOOK_BUDGET_S:.0f}",
                    "ok" if ok else "OVER",
                    f"{peak_mb:.0f}",
                    widths=widths,
                ),
                flush=True,
            )
        print()

    rows, first_ms = widget_rows(args.calls)
    widths = (50, 11, 9, 6, 8, 5)
    print(line("widget update", "median (ms)", "p95 (ms)", "calls", "budget", "", widths=widths))
    if md:
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for name, median, p95, n in rows:
        ok = median <= WIDGET_BUDGET_MS
        over += [] if ok else [name]
        print(
            line(
                name,
                f"{median:.1f}",
                f"{p95:.1f}",
                str(n),
                f"{WIDGET_BUDGET_MS:.0f}",
                "ok" if ok else "OVER",
                widths=widths,
            )
        )
    print(
        "\n(first chapter-01 update, which draws and caches the static background: "
        f"{first_ms:.0f} ms; "
        f"torch threads {THREADS}, matplotlib backend Agg, {os.cpu_count()} CPU cores)"
    )
    if over:
        print("over budget:", ", ".join(over))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
