"""What crosses from the sandbox to the grader arrives as the visible check sees it: numpy's
scalars as the numbers they are, other values named by their own type."""

import numpy as np
import torch

from attncourse.classroom import protocol
from attncourse.exercises.ch06 import check_pattern_head_size


def _sent(value):
    arrays = {}
    return protocol.decode(protocol.encode(value, arrays), arrays)


def test_numpy_scalars_arrive_as_python_numbers():
    for value, kind in ((np.float64(-0.25), float), (np.int64(3), int), (np.int32(-7), int)):
        got = _sent(value)
        assert type(got) is kind and got == value, (value, got)
    assert repr(_sent(np.float64("nan"))) == "nan"


def test_a_numpy_count_earns_in_the_grader_what_it_earns_in_the_visible_check():
    """np.linalg.matrix_rank returns a numpy.int64: the visible check takes it (the text allows
    numpy), so the answer judged on the grader's side must pass too."""
    for case in check_pattern_head_size.inputs(62):
        P = case.args[0]
        logs = np.log(P.numpy())
        centred = logs - logs.mean(axis=1, keepdims=True)
        largest = np.linalg.svd(centred, compute_uv=False)[0]
        answer = np.linalg.matrix_rank(centred, tol=1e-9 * max(1.0, largest))
        assert isinstance(answer, np.integer)
        assert check_pattern_head_size.judge(case, _sent(answer)) is None, case.label


def test_another_value_is_named_by_its_own_type():
    got = _sent(x for x in range(3))
    assert isinstance(got, protocol.Placeholder) and type(got).__name__ == "generator"
    assert type(_sent(torch.zeros(2, dtype=torch.complex64))).__name__.startswith("tensor of")


def test_a_tensor_subclass_is_refused_in_the_grader_as_in_the_visible_check():
    from attncourse.exercises.ch01 import check_weighted_average

    case = check_weighted_average.inputs(12)[0]
    answer = torch.nn.Parameter(case.args[0] @ case.args[1], requires_grad=False)
    assert type(_sent(answer)).__name__ == "Parameter"
    assert "Parameter" in check_weighted_average.judge(case, _sent(answer))
    assert check_weighted_average.judge(case, _sent(answer.detach().clone())) is None


def test_a_type_name_the_submission_made_up_cannot_break_the_grader():
    for name in ("a\0b", "x" * 500, ""):
        got = protocol.decode({"type": "other", "name": name}, {})
        assert isinstance(got, protocol.Placeholder) and "\0" not in type(got).__name__
