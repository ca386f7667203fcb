"""A failed check shows its message alone in a notebook, not a traceback into the check engine,
and is still a failure for pytest, nbval and the grader."""

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from attncourse.exercises.ch00 import check_uniform_attention
from attncourse.exercises.engine import CheckFailed


def summed(values):
    return values.sum(dim=0)


def test_a_failed_check_is_an_assertion_error_with_the_message():
    with pytest.raises(AssertionError, match="summed the values: divide by their number S"):
        check_uniform_attention(summed)
    with pytest.raises(CheckFailed) as failure:
        check_uniform_attention(summed)
    lines = failure.value._render_traceback_()
    assert "summed the values" in lines[0] and "✗" in lines[0]
    assert not any("Traceback" in line or "engine.py" in line for line in lines)


def test_in_a_notebook_the_failure_shows_the_message_alone_and_fails_the_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from attncourse.exercises.ch00 import check_uniform_attention\n\n"
            "def uniform_attention(values):\n    return values.sum(dim=0)\n\n"
            "check_uniform_attention(uniform_attention)"
        )
    ]
    client = NotebookClient(nb, timeout=120, kernel_name="python3")
    with pytest.raises(CellExecutionError):
        client.execute()
    (error,) = [o for o in nb.cells[0].outputs if o.output_type == "error"]
    shown = "\n".join(error.traceback)
    assert error.ename == "CheckFailed"
    assert "uniform_attention: summed the values: divide by their number S" in shown
    assert "engine.py" not in shown and "Traceback" not in shown and "File " not in shown
