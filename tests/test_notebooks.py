"""Every chapter notebook is committed as the course promises: paired, executed, seeded,
stripped.
"""

import importlib.util
import json
import re
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_there_are_chapters():
    assert NOTEBOOKS, "no chapter notebooks found in notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_jupytext_pair_is_in_sync(path):
    pair = path.with_suffix(".py")
    assert pair.exists(), f"{pair.name} is missing: pair the notebook with jupytext (py:percent)"
    text = jupytext.writes(jupytext.read(path), fmt="py:percent")  # `jupytext --to py:percent`
    assert text == pair.read_text(), (
        f"{path.name} and {pair.name} differ: update one from the other"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_executed_seeded_and_stripped(path):
    nb = json.loads(path.read_text())
    assert "widgets" not in nb["metadata"], (
        "widget state is stored: strip it with nbstripout --extra-keys metadata.widgets"
    )
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["execution_count"] is not None for c in code), (
        "run the notebook top to bottom before committing"
    )
    counts = [c["execution_count"] for c in code]
    assert counts == sorted(counts), "cells were executed out of order"
    assert re.search(r"manual_seed\(", "".join(code[0]["source"])), (
        "the first code cell must set the seeds"
    )
    graded = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    assert graded, "a chapter has graded exercises"


def test_nbval_still_fails_an_instructor_check_that_raises():
    """The raises-exception tag that lets a learner's Run All go on past a check (held in
    tests/classroom/test_release.py) would let nbval pass an instructor's check that fails; the
    root conftest.py takes that allowance back for check cells only."""
    spec = importlib.util.spec_from_file_location(
        "root_conftest", NOTEBOOKS[0].parents[1] / "conftest.py"
    )
    root_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root_conftest)

    class Test:  # a test function's item
        nodeid = "tests/test_x.py::test_x"

    class Item(Test):  # an nbval item: its cell and its options
        def __init__(self, metadata):
            self.cell, self.options = {"metadata": metadata}, {"check_exception": True}

    tag = {"tags": ["raises-exception"]}
    check = Item({"nbgrader": {"grade": True, "grade_id": "x_test"}, **tag})
    demo = Item(tag)  # a cell meant to show an error keeps the allowance
    items = [check, demo, Test(), Test()]
    items[-1].nodeid = f"{root_conftest.LONGEST_FIRST[0]}::test_y"  # a long file's test comes first
    root_conftest.pytest_collection_modifyitems(items)
    assert items[0].nodeid.startswith(root_conftest.LONGEST_FIRST[0]) and items[1] is check
    assert check.options["check_exception"] is False
    assert demo.options["check_exception"] is True
