"""The notebooks run under nbval in kernels that inherit this process's environment."""

import os

import pytest

# a shell's MPLBACKEND=Agg would leave the notebooks' figures out
os.environ.pop("MPLBACKEND", None)


def pytest_collection_finish(session):
    if "MPLBACKEND" in os.environ:
        raise pytest.UsageError(
            "a test module set MPLBACKEND while it was collected: the notebook kernels would "
            "inherit it and draw no figures; call matplotlib.use('Agg') in the test module instead"
        )
