"""How the course's small experiments use the CPU: one intra-op thread each, and independent runs
(seeds, the cells of a grid) side by side, one per core."""

import functools
import math
import os
import sys
from pathlib import Path

import torch


class single_thread:
    """Run a block (or, as a decorator, a function) on one intra-op thread, then restore the count.

    The course's experiments are long chains of tiny tensor operations (a 64-wide RNN step, a
    batch-64 optimiser step): a second thread cannot speed those up, and on a busy machine its
    synchronisation makes each operation many times slower.
    """

    def __enter__(self):
        self.saved = torch.get_num_threads()
        torch.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        torch.set_num_threads(self.saved)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with single_thread():
                return fn(*args, **kwargs)

        return wrapped


CPU_MAX = Path("/sys/fs/cgroup/cpu.max")  # a container's CPU quota (cgroup v2): "quota period"


def cores(cpu_max: Path = CPU_MAX) -> int:
    """The CPU cores this process may use: those it may run on, capped by a container's CPU quota
    (a JupyterHub server limited to 2 CPUs on a 64-core node has 2)."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        quota, period = cpu_max.read_text().split()
        if quota != "max":
            n = min(n, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return n


def side_by_side(fn, calls, desc: str | None = None, progress: bool = True) -> list:
    """``[fn(*args) for args in calls]``, in order, with as many runs at once as there are cores;
    a call that is a dict gives keyword arguments instead (``fn(**kwargs)``).

    Since each experiment keeps to one thread, two independent runs on two cores take about the
    time of one. Each run goes to a worker process forked from this one (Linux; ``fn`` and its
    results must pickle); where processes are not forked (macOS, Windows) or there is one core,
    the runs go one after another. Results are the same either way: every run seeds itself.
    """
    from tqdm.auto import tqdm

    calls = [((), args) if isinstance(args, dict) else (tuple(args), {}) for args in calls]
    workers = min(len(calls), cores())
    with tqdm(total=len(calls), desc=desc, disable=not progress, unit="run") as bar:
        if workers < 2 or not sys.platform.startswith("linux"):
            results = []
            for args, kwargs in calls:
                results.append(fn(*args, **kwargs))
                bar.update(1)
            return results
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # a forked worker must not use the thread pool it inherited (it would wait forever for
        # threads that were not copied): one thread from the start, as in PyTorch's DataLoader
        fork = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(
            workers, fork, initializer=torch.set_num_threads, initargs=(1,)
        ) as pool:
            futures = [pool.submit(fn, *args, **kwargs) for args, kwargs in calls]
            for _ in as_completed(futures):
                bar.update(1)
            return [future.result() for future in futures]
