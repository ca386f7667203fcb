"""The notebooks run under nbval in kernels that inherit this process's environment."""

import os

import pytest

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


def pytest_collection_modifyitems(items):
    """A check cell is tagged raises-exception so that a learner's Run All goes on past an exercise
    still blank; nbval takes the tag to allow an error. In the instructor notebooks every check
    must pass: nbval fails a check cell that raises."""
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is not None and (cell.get("metadata", {}).get("nbgrader") or {}).get("grade"):
            item.options["check_exception"] = False
