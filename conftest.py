"""The notebooks run under nbval in kernels that inherit this process's environment."""

import os

import pytest

from attncourse.classroom.notebooks import is_graded

# a shell's MPLBACKEND=Agg would leave the notebooks' figures out
os.environ.pop("MPLBACKEND", None)
# Two test workers share the cores, each with PyTorch's threads (a notebook's kernel takes two):
# a thread waiting for work sleeps instead of spinning, leaving its core to the other worker. Only
# how threads wait changes, not what they compute (measured: the notebooks, two at a time, 6 %
# less time on 2 cores). It must be set before PyTorch loads: here, in every worker and kernel.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def pytest_collection_finish(session):
    if "MPLBACKEND" in os.environ:
        raise pytest.UsageError(
            "a test module set MPLBACKEND while it was collected: the notebook kernels would "
            "inherit it and draw no figures; call matplotlib.use('Agg') in the test module instead"
        )


# The test files and notebooks that take longest (measured on 2 cores, longest first). With
# ``-n 2 --dist loadscope``, xdist hands each worker one file at a time, in collection order
# (pyproject.toml turns off its own reordering, by number of tests, which left a single long test
# such as the JupyterHub class to the end, a worker idle meanwhile): the long ones go first, and
# the two workers end together. A file not listed keeps its place after them.
LONGEST_FIRST = (
    "tests/classroom/test_hostile.py",
    "notebooks/09_pre_ln_vs_post_ln.ipynb",
    "tests/deploy/test_hub.py",
    "tests/classroom/test_grade.py",
    "tests/classroom/test_site.py",
    "notebooks/06_multi_head_information.ipynb",
    "tests/chapters/test_ch09_pre_ln_vs_post_ln.py",
    "notebooks/05_information_flow.ipynb",
    "notebooks/10_efficient_gated_attention.ipynb",
    "notebooks/07_positional_encoding.ipynb",
    "notebooks/08_residual_highway_normalization.ipynb",
    "tests/classroom/test_shards.py",
)


def _place(item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(items):
    """The long files first (``LONGEST_FIRST``). A check cell is tagged raises-exception so that a
    learner's Run All goes on past an exercise still blank; nbval takes the tag to allow an error.
    In the instructor notebooks every check must pass: nbval fails a check cell that raises."""
    items.sort(key=_place)  # stable: the order within a file, and of the rest, stays
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is not None and is_graded(cell):
            item.options["check_exception"] = False
