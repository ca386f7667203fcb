"""Submissions from students who want marks without solving anything, graded together as one
class: each scores exactly what its honest parts earn, the batch finishes, the package and the
instructor's files are unchanged afterwards, and nothing a submission started outlives grading.

Every submission starts from a fresh release of the fixture notebook (tests/classroom/fixtures):
exercise 1 (2 points) is a from-scratch softmax, exercise 2 (1 point) a weighted average. An
honest answer to exercise 2 is put into every attack, so an attack on exercise 1 must still leave
its 1 point, and an attack that spills over shows.

Some attacks are refused by reading the answer before it runs; to show that the design holds
without that first line, the runtime attacks are graded with it switched off (``unread``): the
sandbox and the verdict outside it must stop them on their own.
"""

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from classroom_helpers import FIXTURE, FIXTURES, ROOT

from attncourse.classroom import marking, sandbox
from attncourse.classroom.grade import grade

SOFTMAX = "stable_softmax"
AVERAGE = "weighted_average"
HONEST_AVERAGE = "def weighted_average(weights, values):\n    return weights @ values\n"
HONEST_SOFTMAX = (
    "def stable_softmax(scores):\n"
    "    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))\n"
    "    return e / e.sum(dim=-1, keepdim=True)\n"
)
TIMEOUT = 15  # seconds a cell or call may take here


def _sandbox_or_skip():
    try:
        sandbox.check_sandbox()
    except sandbox.SandboxUnavailable as error:
        if os.environ.get("CI") == "true":
            raise AssertionError(f"CI must test the sandbox: {error}") from None
        pytest.skip(f"no bubblewrap sandbox here ({error}); install the package bubblewrap")


def _tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(folder)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _sandbox_processes() -> list[int]:
    """Processes of the sandboxes' users still alive."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                uid = int((entry / "status").read_text().split("Uid:")[1].split()[0])
            except (OSError, IndexError, ValueError):
                continue
            if sandbox.SANDBOX_UID <= uid < sandbox.SANDBOX_UID + 64:
                found.append(int(entry.name))
    return found


def _submission(release: Path, folder: Path, answers=None, edit=None) -> Path:
    """A copy of the release with ``answers`` {grade id: source} put in, then ``edit(cells)``."""
    nb = json.loads(release.read_text())
    answers = {AVERAGE: HONEST_AVERAGE, **(answers or {})}
    for cell in nb["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id]
    if edit is not None:
        edit(nb["cells"])
    folder.mkdir(parents=True)
    path = folder / FIXTURE.name
    path.write_text(json.dumps(nb) if isinstance(nb, dict) else nb)
    return path


def _cell(cells, grade_id):
    return next(
        c for c in cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id
    )


READ_ATTACKS = {  # refused by reading the answer: exercise 1 earns 0, exercise 2 its point
    "built-in softmax": "def stable_softmax(s):\n    return torch.softmax(s, -1)\n",
    "built-in under another name": (
        "from torch.nn.functional import softmax as smooth\n\n"
        "def stable_softmax(s):\n    return smooth(s, dim=-1)\n"
    ),
    "built-in in a list": "def stable_softmax(s):\n    return [torch.softmax][0](s, -1)\n",
    "method reference": "def stable_softmax(s):\n    f = s.softmax\n    return f(-1)\n",
    "getattr": "def stable_softmax(s):\n    return getattr(torch, 'soft' + 'max')(s, -1)\n",
    "softmax inside cross-entropy": (
        "import torch.nn.functional as F\n\n"
        "def stable_softmax(s):\n"
        "    n = s.shape[-1]\n"
        "    flat = s.reshape(-1, n).repeat_interleave(n, 0)\n"
        "    target = torch.arange(n).repeat(flat.shape[0] // n)\n"
        "    nll = F.cross_entropy(flat, target, reduction='none')\n"
        "    return torch.exp(-nll).reshape(s.shape)\n"
    ),
    "the course's own softmax": (
        "from attncourse.attention import softmax\n\n"
        "def stable_softmax(s):\n    return softmax(s)\n"
    ),
    "the course's function bound to the name": (
        "from attncourse.attention import softmax as stable_softmax\n"
    ),
    "patching the checks' comparison": (
        "torch.allclose = lambda *a, **k: True\n\n"
        "def stable_softmax(s):\n    return torch.zeros_like(s)\n"
    ),
    "patching the grader's protocol": (
        "import attncourse.classroom.protocol as p\n"
        "p.send = lambda *a, **k: None\n\n"
        "def stable_softmax(s):\n    return s\n"
    ),
    "private torch": "def stable_softmax(s):\n    return torch._softmax(s, -1, False)\n",
    "deep expression": "x = " + "-" * 200_000 + "1\n",
    "exec": "exec('def stable_softmax(s):\\n    return torch.softmax(s, -1)')\n",
}

# Graded with the reading switched off: the sandbox must hold on its own. Each attack takes the
# place of exercise 1's answer; exercise 2's honest answer must keep its point.
RUNTIME_ATTACKS = {
    "forged answers through the protocol": (
        "import os\n"
        "import attncourse.classroom.protocol as p\n"
        "def stable_softmax(s):\n"
        "    return torch.full_like(s, 1.0 / s.shape[-1])\n"
        "p.send(4, {'ok': True, 'value': {'type': 'plain', 'value': None}})\n"
    ),
    "patched comparison in its own process": (
        "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"
        "def stable_softmax(s):\n    return torch.zeros_like(s)\n"
    ),
    "writes into the package": (
        "import attncourse, pathlib\n"
        "init = pathlib.Path(attncourse.__file__)\n"
        "try:\n    init.write_text(init.read_text() + '\\nHACKED = 1\\n')\n"
        "except OSError:\n    pass\n" + "def stable_softmax(s):\n    return s\n"
    ),
    "reads the instructor notebook": (
        f"import pathlib\nleak = pathlib.Path({str(FIXTURE)!r}).exists()\n"
        "def stable_softmax(s):\n"
        "    e = torch.exp(s - s.amax(dim=-1, keepdim=True))\n"
        "    out = e / e.sum(dim=-1, keepdim=True)\n"
        "    return out if leak else out * 0\n"  # full marks only if the file can be read
    ),
    "leaves a process running": (
        "import subprocess\n"
        "subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        "import os\nif os.fork() == 0:\n    import time\n    time.sleep(300)\n    os._exit(0)\n"
    ),
    "huge output": "print('x' * (200 << 20))\n",
    "kills its own process": "import os\nos._exit(3)\n",
    "ignores interrupts and loops": (
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n"
    ),
    "loops inside the function": "def stable_softmax(s):\n    while True:\n        pass\n",
    "a memory bomb": "x = bytearray(64 << 30)\n",
    "a fork bomb": (
        "import os\nfor _ in range(10_000):\n    try:\n        os.fork()\n    except OSError:\n"
        "        break\n"
    ),
}


def _structure_attacks(release: Path):
    def markdown(cells):
        _cell(cells, SOFTMAX)["cell_type"] = "markdown"
        _cell(cells, SOFTMAX).pop("outputs", None)
        _cell(cells, SOFTMAX).pop("execution_count", None)

    def not_a_dict(cells):
        cells.insert(3, {"cell_type": "code", "metadata": {"nbgrader": "grade"}, "source": "x = 1",
                         "outputs": [], "execution_count": None})  # fmt: skip

    def unknown_id(cells):
        extra = json.loads(json.dumps(_cell(cells, SOFTMAX)))
        extra["metadata"]["nbgrader"]["grade_id"] = "extra_points"
        extra.pop("id", None)
        cells.insert(3, extra)

    def edited_test(cells):
        _cell(cells, f"test_{SOFTMAX}")["source"] = "pass\n"

    def deleted_test(cells):
        cells.remove(_cell(cells, f"test_{SOFTMAX}"))

    def duplicated_test(cells):  # an honest copy-paste: ignored, not punished
        copy = json.loads(json.dumps(_cell(cells, f"test_{SOFTMAX}")))
        copy.pop("id", None)
        cells.insert(cells.index(_cell(cells, f"test_{SOFTMAX}")) + 1, copy)

    def two_answers(cells):
        copy = json.loads(json.dumps(_cell(cells, SOFTMAX)))
        copy["source"] = "def stable_softmax(s):\n    return s\n"
        copy.pop("id", None)
        cells.insert(2, copy)

    return {
        "answer cell turned into markdown": (markdown, HONEST_SOFTMAX, "another kind of cell"),
        "nbgrader metadata not a dict": (not_a_dict, HONEST_SOFTMAX, "not a dictionary"),
        "an unknown grade id": (unknown_id, HONEST_SOFTMAX, "unknown to the release"),
        "edited check cell": (edited_test, HONEST_SOFTMAX, "was edited"),
        "deleted check cell": (deleted_test, HONEST_SOFTMAX, "was deleted"),
        "duplicated check cell": (duplicated_test, HONEST_SOFTMAX, None),
        "two different answer cells": (two_answers, HONEST_SOFTMAX, "appears twice"),
    }


@pytest.fixture(scope="module")
def graded(released, tmp_path_factory):
    """{name: (result, the expected points of exercise 1, what its note must say)}."""
    _sandbox_or_skip()
    release = released[FIXTURE.name]
    root = tmp_path_factory.mktemp("hostile")
    package = ROOT / "attncourse" / "__init__.py"  # what the "writes into the package" attack edits
    before = (package.read_bytes(), _tree_hash(FIXTURES), _sandbox_processes())
    submissions, expect = [], {}
    for name, source in READ_ATTACKS.items():
        submissions.append(_submission(release, root / "read" / name, {SOFTMAX: source}))
        expect[submissions[-1]] = (name, 0.0, None)
    for name, (edit, source, note) in _structure_attacks(release).items():
        submissions.append(_submission(release, root / "structure" / name, {SOFTMAX: source}, edit))
        expect[submissions[-1]] = (name, 2.0 if note is None else 0.0, note)
    unreadable = root / "read" / "not a notebook" / FIXTURE.name
    unreadable.parent.mkdir(parents=True)
    unreadable.write_text("{" * 100_000)  # JSON nested too deep
    honest = _submission(release, root / "read" / "honest", {SOFTMAX: HONEST_SOFTMAX})
    expect[honest] = ("honest", 2.0, None)
    blank = root / "read" / "blank"
    blank.mkdir(parents=True)
    shutil.copyfile(release, blank / FIXTURE.name)
    expect[blank / FIXTURE.name] = ("blank", 0.0, "not implemented")

    started = time.monotonic()
    results = grade(
        [*submissions, unreadable, honest, blank / FIXTURE.name],
        source=FIXTURES, jobs=2, timeout=TIMEOUT, echo=lambda _: None,
    )  # fmt: skip
    read_seconds = time.monotonic() - started

    runtime = {
        _submission(release, root / "runtime" / name, {SOFTMAX: source}): name
        for name, source in RUNTIME_ATTACKS.items()
    }
    real_problem = marking.static_problem
    marking.static_problem = lambda *args, **kwargs: None  # the first line off
    try:
        runtime_results = grade(
            list(runtime), source=FIXTURES, jobs=2, timeout=TIMEOUT, echo=lambda _: None
        )
    finally:
        marking.static_problem = real_problem
    after_blank = grade([blank / FIXTURE.name], source=FIXTURES, timeout=TIMEOUT, echo=print)
    time.sleep(1)
    after = (package.read_bytes(), _tree_hash(FIXTURES), _sandbox_processes())
    return {
        "results": dict(zip([*submissions, unreadable, honest, blank / FIXTURE.name], results)),
        "expect": expect,
        "unreadable": unreadable,
        "runtime": {runtime[Path(r.submission)]: r for r in runtime_results},
        "before": before,
        "after": after,
        "after_blank": after_blank[0],
        "read_seconds": read_seconds,
    }


def _points(result):
    return {e.grade_id: e.points for e in result.exercises}


def _notes(result):
    return {e.grade_id: e.note for e in result.exercises}


@pytest.mark.parametrize("attack", list(READ_ATTACKS))
def test_an_answer_that_does_not_compute_it_itself_earns_nothing(attack, graded):
    result = next(
        r for p, r in graded["results"].items() if graded["expect"].get(p, ("",))[0] == attack
    )
    assert _points(result) == {f"test_{SOFTMAX}": 0.0, f"test_{AVERAGE}": 1.0}, _notes(result)
    assert _notes(result)[f"test_{SOFTMAX}"], "a zero always says why"


@pytest.mark.parametrize("attack", list(_structure_attacks(FIXTURE)))
def test_a_broken_structure_costs_only_its_exercise(attack, graded):
    path = next(p for p, e in graded["expect"].items() if e[0] == attack)
    _, points, note = graded["expect"][path]
    result = graded["results"][path]
    assert _points(result) == {f"test_{SOFTMAX}": points, f"test_{AVERAGE}": 1.0}, _notes(result)
    if note:
        assert note in _notes(result)[f"test_{SOFTMAX}"]


def test_an_unreadable_file_is_a_zero_with_a_reason_and_the_batch_goes_on(graded):
    result = graded["results"][graded["unreadable"]]
    assert result.points == 0 and "not a readable notebook" in " ".join(result.notes)
    honest = next(
        r for p, r in graded["results"].items() if graded["expect"].get(p, ("",))[0] == "honest"
    )
    assert honest.points == 3.0


def test_a_blank_release_earns_nothing(graded):
    blank = next(
        r for p, r in graded["results"].items() if graded["expect"].get(p, ("",))[0] == "blank"
    )
    assert blank.points == 0 and "not implemented" in _notes(blank)[f"test_{SOFTMAX}"]


RUNTIME_NOTES = {  # what exercise 1's note must say
    "kills its own process": "ended",
    "ignores interrupts and loops": f"stopped after {TIMEOUT:g} s",
    "loops inside the function": f"stopped after {TIMEOUT:g} s",
    "a memory bomb": "MemoryError",
}


@pytest.mark.parametrize("attack", list(RUNTIME_ATTACKS))
def test_the_sandbox_and_the_verdict_outside_it_hold_on_their_own(attack, graded):
    result = graded["runtime"][attack]
    assert _points(result) == {f"test_{SOFTMAX}": 0.0, f"test_{AVERAGE}": 1.0}, _notes(result)
    assert RUNTIME_NOTES.get(attack, "") in _notes(result)[f"test_{SOFTMAX}"]


def test_nothing_a_submission_did_outlives_grading_or_changes_the_package(graded):
    package, instructor, processes = graded["after"]
    assert package == graded["before"][0] and b"HACKED" not in package, "the package changed"
    assert instructor == graded["before"][1], "the instructor's notebooks changed"
    assert processes == [], f"processes of the sandboxes' users still run: {processes}"
    assert graded["after_blank"].points == 0, "a later blank submission must still earn nothing"


def test_the_grades_never_print_control_characters(graded, released, tmp_path):
    evil = "def stable_softmax(s):\n    raise ValueError('\\x1b[2J\\x1b[31mred\\x07')\n"
    path = _submission(released[FIXTURE.name], tmp_path / "evil", {SOFTMAX: evil})
    result = grade([path], source=FIXTURES, timeout=TIMEOUT, echo=lambda _: None)[0]
    note = _notes(result)[f"test_{SOFTMAX}"]
    assert "ValueError" in note and "\x1b" not in note and "\x07" not in note
