"""Submissions from students who want marks without solving anything, graded together as one
class: each scores exactly what its honest parts earn, the batch finishes, the package and the
instructor's files are unchanged afterwards, and nothing a submission started outlives grading.

Every submission starts from a fresh release of the fixture notebook (tests/classroom/fixtures):
exercise 1 (2 points) is a from-scratch softmax, exercise 2 (1 point) a weighted average. An
honest answer to exercise 2 is put into every attack, so an attack on exercise 1 must still leave
its 1 point, and an attack that spills over shows.

Some attacks are refused by reading the answer before it runs; to show that the design holds
without that first line, the runtime attacks are graded with it switched off: the sandbox and the
verdict outside it must stop them on their own.

Every batch is graded in a process of its own with a deadline (``_grade``): a submission that
hangs the grader fails its test when the deadline passes, and never hangs the suite.
"""

import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch
from classroom_helpers import (
    AVERAGE,
    FIXTURE,
    FIXTURES,
    HONEST_AVERAGE,
    HONEST_SOFTMAX,
    ROOT,
    SOFTMAX,
    install_wheel,
    sandbox_or_skip,
    with_answers,
)

from attncourse.classroom import cgroup, sandbox
from attncourse.classroom.cli import _parser
from attncourse.classroom.grade import format_result, read_results, write_csv
from attncourse.classroom.marking import Graded
from attncourse.classroom.notebooks import DEFAULT_SOURCE
from attncourse.exercises import ch01, scan

TIMEOUT = 8  # seconds a cell or call may take here: the loops below spin that long


_GRADE = """
import json, sys
from pathlib import Path
from attncourse.classroom import marking
from attncourse.classroom.grade import grade
from attncourse.classroom.sandbox import Limits
args = json.loads(sys.argv[1])
if not args["read"]:
    marking.static_problem = lambda *a, **k: None  # the first line off
results = grade(
    [Path(p) for p in args["paths"]], source=Path(args["source"]), jobs=2,
    timeout=args["timeout"], notebook_timeout=args["budget"], limits=Limits(**args["limits"]),
    progress=False, echo=lambda _: None,
)
print("RESULTS " + json.dumps([r.as_dict() for r in results]))
"""


def _grade(paths, *, limit, source=FIXTURES, timeout=TIMEOUT, budget=None, read=True,
           limits=None, python=sys.executable, env=None):  # fmt: skip
    """``grade(paths)`` in a process of its own; a failed test if it is not done in ``limit``
    seconds (it is then killed, with every sandbox it started)."""
    args = {
        "paths": [str(p) for p in paths], "source": str(source), "timeout": timeout,
        "budget": budget, "read": read, "limits": limits or {},
    }  # fmt: skip
    process = subprocess.Popen(
        [str(python), "-c", _GRADE, json.dumps(args)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env=env,
    )  # fmt: skip
    try:
        out, err = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"grading did not finish within {limit} s: a submission hung the grader")
    assert process.returncode == 0, err[-3000:]
    line = next(line for line in out.splitlines() if line.startswith("RESULTS "))
    return [Graded.from_dict(d) for d in json.loads(line[len("RESULTS ") :])]


def _tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(folder)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def _sandbox_processes() -> list[int]:
    """Processes of the sandboxes' users that no running grader owns: their ancestors up to the
    init process are bubblewrap or sandbox processes only (another test's sandbox, still running
    under its grader, is not counted)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = _status(int(entry.name))
            if not sandbox.SANDBOX_UID <= int(status["Uid"].split()[0]) < sandbox.SANDBOX_UID + 64:
                continue
            parent = int(status["PPid"])
            while parent > 1:
                above = _status(parent)
                uid = int(above["Uid"].split()[0])
                in_sandbox = sandbox.SANDBOX_UID <= uid < sandbox.SANDBOX_UID + 64
                if not in_sandbox and above["Name"] != "bwrap":
                    break  # a grader still runs this sandbox
                parent = int(above["PPid"])
            else:
                found.append(int(entry.name))
        except (OSError, KeyError, IndexError, ValueError):
            continue  # the process ended meanwhile
    return found


def _submission(release: Path, folder: Path, answers=None, edit=None) -> Path:
    """A copy of the release with an honest answer to exercise 2 and ``answers`` put in."""
    return with_answers(release, folder, {AVERAGE: HONEST_AVERAGE, **(answers or {})}, edit)


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
    "scaled-dot-product attention as a softmax": (
        "import torch.nn.functional as F\n\n"
        "def stable_softmax(s):\n"
        "    n = s.shape[-1]\n"
        "    q = torch.ones(*s.shape[:-1], 1, 1, dtype=s.dtype)\n"
        "    v = torch.eye(n, dtype=s.dtype).expand(*s.shape[:-1], n, n)\n"
        "    return F.scaled_dot_product_attention(q, s.unsqueeze(-1), v).squeeze(-2)\n"
    ),
    "a distribution's probabilities": (
        "def stable_softmax(s):\n    return torch.distributions.Categorical(logits=s).probs\n"
    ),
    "a private aten op fetched by name": (
        "def stable_softmax(s):\n"
        "    return torch.ops.aten.__getattr__('_soft' + 'max')(s, -1, False)\n"
    ),
    "a pydoc lookup": (
        "import pydoc\n\ndef stable_softmax(s):\n"
        "    return pydoc.locate('torch.nn.functional.soft' + 'max')(s, dim=-1)\n"
    ),
    "torch's own sys module": (
        "def stable_softmax(s):\n"
        "    return vars(torch.sys.modules['torch.nn.functional'])['soft' + 'min'](-s, -1)\n"
    ),
    "a module handed around as a value": (
        "def stable_softmax(s):\n    m = [torch.nn.functional][0]\n    return m.softmin(-s, -1)\n"
    ),
    "import *": (
        "from torch.nn.functional import *\n\ndef stable_softmax(s):\n    return softmin(-s, -1)\n"
    ),
    "a magic that imports the built-in": (
        "%time from torch.nn.functional import softmax as smooth\n"
        "def stable_softmax(s):\n    return smooth(s, dim=-1)\n"
    ),
    "a lookup table of the shipped hidden inputs": None,  # made from the checks (_table)
    "an exception named after the hidden input": None,
}
HIDDEN_ATTACKS = (
    "a lookup table of the shipped hidden inputs",
    "an exception named after the hidden input",
)
HONEST_VARIANTS = {  # honest answers in the forms learners write them: full marks
    "import sys beside the answer": "import sys\n\n" + HONEST_SOFTMAX,
    "standard imports it uses": (
        "import math\nfrom functools import reduce\n\n"
        "def stable_softmax(scores):\n"
        "    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))\n"
        "    total = reduce(lambda a, b: a + b, e.unbind(-1))\n"
        "    return e / total.unsqueeze(-1) * math.exp(0)\n"
    ),
    "%%time on top of the answer": "%%time\n" + HONEST_SOFTMAX,
    "a %timeit line after it": HONEST_SOFTMAX + "%timeit stable_softmax(torch.randn(4))\n",
}


def _tensor_literal(t) -> str:
    return f"torch.tensor({t.tolist()!r}, dtype={t.dtype})"


def _table(check, seeds, wrong_otherwise) -> str:
    """An answer that knows the right outputs of ``check``'s inputs for ``seeds`` (what a
    learner could prepare from seeds shipped in the package) and guesses otherwise."""
    rows = []
    for seed in seeds:
        for case in check.inputs(seed):
            (x,) = case.args
            rows.append(f"    ({_tensor_literal(x)}, {_tensor_literal(check.expected(case))}),")
    return (
        "TABLE = [\n" + "\n".join(rows) + "\n]\n\n"
        "def stable_softmax(s):\n"
        "    for x, y in TABLE:\n"
        "        if x.shape == s.shape and x.dtype == s.dtype and torch.equal(x, s):\n"
        "            return y.clone()\n" + wrong_otherwise
    )


def _hidden_attacks():
    """The answers of HIDDEN_ATTACKS: right on the visible check, and on the hidden tests only
    if their inputs are the ones shipped with the package (seed 11 in the fixture)."""
    leak = (
        "    digits = str(int(float(s.abs().sum()) * 1000))\n"
        "    raise type('Leak' + digits, (ValueError,), {})('hidden input ' + digits)\n"
    )
    return {
        HIDDEN_ATTACKS[0]: _table(ch01.check_softmax, (0, 11), "    return s\n"),
        HIDDEN_ATTACKS[1]: _table(ch01.check_softmax, (0,), leak),
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
    "reads the instructor notebooks or a classmate's work": (
        "import pathlib\n"
        f"secrets = [{str(FIXTURE)!r}, {str(DEFAULT_SOURCE)!r}, CLASSMATE]\n"
        "def readable(path):\n"
        "    try:\n"
        "        p = pathlib.Path(path)\n"
        "        return bool(list(p.iterdir())) if p.is_dir() else bool(p.read_bytes())\n"
        "    except OSError:\n"
        "        return False\n"
        "leak = any(readable(p) for p in secrets)\n"
        "def stable_softmax(s):\n"
        "    e = torch.exp(s - s.amax(dim=-1, keepdim=True))\n"
        "    out = e / e.sum(dim=-1, keepdim=True)\n"
        "    return out * 0 if leak else out\n"  # full marks only if nothing can be read
    ),
    "fills its disk": (  # 25 files of 60 MB: its tmpfs holds 256 MB, the host's disk nothing
        "import os\nwritten = 0\nfor i in range(25):\n"
        "    try:\n"
        "        with open(f'/tmp/fill{i}', 'wb') as f:\n"
        "            for _ in range(60):\n"
        "                f.write(b'x' * (1 << 20))\n"
        "                written += 1\n"
        "    except OSError:\n"
        "        break\n"
        "def stable_softmax(s):\n"
        "    e = torch.exp(s - s.amax(dim=-1, keepdim=True))\n"
        "    out = e / e.sum(dim=-1, keepdim=True)\n"
        "    return out if 200 <= written <= 257 else out * 0\n"  # only if the limit held
    ),
    "answers fewer cases than it was asked": (
        "import attncourse.classroom.protocol as p\n"
        "send = p.send\n"
        "def fewer(fd, header, arrays=None, *rest, **options):\n"
        "    if isinstance(header.get('results'), list):\n"
        "        header['results'] = header['results'][:1]\n"
        "    return send(fd, header, arrays, *rest, **options)\n"
        "p.send = fewer\n" + HONEST_SOFTMAX
    ),
    "answers more cases than it was asked": (
        "import attncourse.classroom.protocol as p\n"
        "send = p.send\n"
        "def more(fd, header, arrays=None, *rest, **options):\n"
        "    if isinstance(header.get('results'), list):\n"
        "        header['results'] = header['results'] * 2\n"
        "    return send(fd, header, arrays, *rest, **options)\n"
        "p.send = more\n" + HONEST_SOFTMAX
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

    def split(cells):  # JupyterLab's "split cell": both halves keep the answer's metadata
        first = _cell(cells, SOFTMAX)
        second = json.loads(json.dumps(first))
        second.pop("id", None)
        first["source"] = "def _shifted(s):\n    return s - s.amax(dim=-1, keepdim=True)\n"
        second["source"] = (
            "def stable_softmax(s):\n"
            "    e = torch.exp(_shifted(s))\n"
            "    return e / e.sum(dim=-1, keepdim=True)\n"
        )
        cells.insert(cells.index(first) + 1, second)

    def malformed_grade_id(cells):
        extra = json.loads(json.dumps(_cell(cells, SOFTMAX)))
        extra["metadata"]["nbgrader"]["grade_id"] = ["not", "a", "string"]
        extra.pop("id", None)
        cells.insert(cells.index(_cell(cells, SOFTMAX)) + 1, extra)

    def stuffed_check(cells):  # a regular expression would backtrack for hours on this
        cell = _cell(cells, f"test_{SOFTMAX}")
        cell["source"] = "".join(cell["source"]) + "### BEGIN HIDDEN TESTS\n" * 200_000

    return {
        "answer cell turned into markdown": (markdown, HONEST_SOFTMAX, "another kind of cell"),
        "nbgrader metadata not a dict": (not_a_dict, HONEST_SOFTMAX, "not a dictionary"),
        "an unknown grade id": (unknown_id, HONEST_SOFTMAX, "unknown to the release"),
        "edited check cell": (edited_test, HONEST_SOFTMAX, "was edited"),
        "deleted check cell": (deleted_test, HONEST_SOFTMAX, "was deleted"),
        "duplicated check cell": (duplicated_test, HONEST_SOFTMAX, None),
        "two different answer cells": (two_answers, HONEST_SOFTMAX, "appears twice"),
        "an answer cell split in two": (split, HONEST_SOFTMAX, None),
        "a malformed grade id in one cell": (malformed_grade_id, HONEST_SOFTMAX, "not a string"),
        "a check cell stuffed with markers": (stuffed_check, HONEST_SOFTMAX, "was edited"),
    }


@pytest.fixture(scope="module")
def graded(released, tmp_path_factory):
    """{name: (result, the expected points of exercise 1, what its note must say)}."""
    sandbox_or_skip()
    release = released[FIXTURE.name]
    root = tmp_path_factory.mktemp("hostile")
    package = ROOT / "attncourse" / "__init__.py"  # what the "writes into the package" attack edits
    before = (package.read_bytes(), _tree_hash(FIXTURES), _sandbox_processes())
    submissions, expect = [], {}
    attacks = {**READ_ATTACKS, **_hidden_attacks()}
    for name, source in attacks.items():
        submissions.append(_submission(release, root / "read" / name, {SOFTMAX: source}))
        expect[submissions[-1]] = (name, 0.0, None)
    for name, source in HONEST_VARIANTS.items():
        submissions.append(_submission(release, root / "read" / name, {SOFTMAX: source}))
        expect[submissions[-1]] = (name, 2.0, None)
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
    paths = [*submissions, unreadable, honest, blank / FIXTURE.name]
    results = _grade(paths, limit=900)
    read_seconds = time.monotonic() - started

    classmate = f"CLASSMATE = {str(honest)!r}\n"
    runtime = {
        _submission(release, root / "runtime" / name, {SOFTMAX: classmate + source}): name
        for name, source in RUNTIME_ATTACKS.items()
    }
    runtime_results = _grade(list(runtime), limit=900, read=False)
    after_blank = _grade([blank / FIXTURE.name], limit=300)
    time.sleep(1)
    after = (package.read_bytes(), _tree_hash(FIXTURES), _sandbox_processes())
    return {
        "results": dict(zip(paths, results)),
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


def _result(graded, name):
    return next(
        r for p, r in graded["results"].items() if graded["expect"].get(p, ("",))[0] == name
    )


@pytest.mark.parametrize("attack", list(READ_ATTACKS))
def test_an_answer_that_does_not_compute_it_itself_earns_nothing(attack, graded):
    result = _result(graded, attack)
    assert _points(result) == {f"test_{SOFTMAX}": 0.0, f"test_{AVERAGE}": 1.0}, _notes(result)
    assert _notes(result)[f"test_{SOFTMAX}"], "a zero always says why"
    if attack not in HIDDEN_ATTACKS:  # refused by reading: the line and the rule, or unreadable
        note = _notes(result)[f"test_{SOFTMAX}"]
        assert "must be written from scratch: line" in note or "cannot be read" in note, note


def test_hidden_inputs_are_drawn_afresh_so_a_table_of_shipped_answers_earns_nothing(graded):
    result = _result(graded, HIDDEN_ATTACKS[0])
    note = _notes(result)[f"test_{SOFTMAX}"]
    assert "passed the visible check but not the hidden tests" in note, note
    assert note == marking_hidden_note(), "a hidden case is reported in the grader's words only"


def test_a_hidden_case_reports_nothing_the_learner_wrote(graded):
    result = _result(graded, HIDDEN_ATTACKS[1])
    note = _notes(result)[f"test_{SOFTMAX}"]
    assert "Leak" not in note and "hidden input" not in note and "ValueError" not in note, note
    assert note == marking_hidden_note()


def marking_hidden_note():
    from attncourse.classroom.assignment import Check
    from attncourse.classroom.marking import hidden_note

    return hidden_note(SOFTMAX, Check("attncourse.exercises.ch01.check_softmax", SOFTMAX, 0, True))


@pytest.mark.parametrize("variant", list(HONEST_VARIANTS))
def test_honest_answers_in_every_form_earn_full_marks(variant, graded):
    result = _result(graded, variant)
    assert _points(result) == {f"test_{SOFTMAX}": 2.0, f"test_{AVERAGE}": 1.0}, _notes(result)


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
    "answers fewer cases than it was asked": "malformed",
    "answers more cases than it was asked": "malformed",
}
RUNTIME_FULL = ("reads the instructor notebooks or a classmate's work", "fills its disk")
# the forgery is in the harness, so it forges exercise 2's answers too (its cell is replayed)
RUNTIME_BOTH = ("answers fewer cases than it was asked", "answers more cases than it was asked")


@pytest.mark.parametrize("attack", list(RUNTIME_ATTACKS))
def test_the_sandbox_and_the_verdict_outside_it_hold_on_their_own(attack, graded):
    result = graded["runtime"][attack]
    first = 2.0 if attack in RUNTIME_FULL else 0.0  # right only if the sandbox held
    second = 0.0 if attack in RUNTIME_BOTH else 1.0
    assert _points(result) == {f"test_{SOFTMAX}": first, f"test_{AVERAGE}": second}, _notes(result)
    assert RUNTIME_NOTES.get(attack, "") in _notes(result)[f"test_{SOFTMAX}"]
    if attack in RUNTIME_BOTH:
        assert RUNTIME_NOTES[attack] in _notes(result)[f"test_{AVERAGE}"]


def test_nothing_a_submission_did_outlives_grading_or_changes_the_package(graded):
    package, instructor, processes = graded["after"]
    assert package == graded["before"][0] and b"HACKED" not in package, "the package changed"
    assert instructor == graded["before"][1], "the instructor's notebooks changed"
    assert processes == [], f"processes of the sandboxes' users still run: {processes}"
    assert graded["after_blank"].points == 0, "a later blank submission must still earn nothing"


def test_the_grades_never_print_control_characters(graded, released, tmp_path):
    evil = "def stable_softmax(s):\n    raise ValueError('\\x1b[2J\\x1b[31mred\\x07\\u202e')\n"
    path = _submission(released[FIXTURE.name], tmp_path / "evil", {SOFTMAX: evil})
    result = _grade([path], limit=300)[0]
    note = _notes(result)[f"test_{SOFTMAX}"]
    assert "ValueError" in note and "\x1b" not in note and "\x07" not in note
    assert "\u202e" not in note and "\u202e" not in format_result(result)


# ------------------------------------------------------------------- the rule for answers

SETUP = {"torch": "torch", "np": "numpy", "math": "math", "F": "torch.nn.functional"}
FAMILY_ATTACKS = [  # (concepts, answer source, what the refusal names)
    (
        ("softmax",),
        "def f(s):\n    return torch.nn.functional.torch.softmax(s, -1)\n",
        "torch.softmax",
    ),
    (("softmax",), "def f(s):\n    return F.cross_entropy(s, s.softmax(-1))\n", "cross_entropy"),
    (("softmax",), "import torch.nn.attention as A\n", "torch.nn.attention"),
    (
        ("entropy",),
        "def f(p):\n    return torch.distributions.Categorical(probs=p).entropy()\n",
        "torch.distributions",
    ),
    (
        ("entropy",),
        "from torch.special import entr\n\ndef f(p):\n    return entr(p).sum(-1)\n",
        "torch.special.entr",
    ),
    (("entropy",), "def f(p):\n    return F.kl_div(p.log(), p, reduction='none')\n", "kl_div"),
    (("autograd",), "import torch.autograd.forward_ad as fwAD\n", "forward_ad"),
    (("autograd",), "def f(x):\n    return torch.func.jacrev(torch.sin)(x)\n", "torch.func.jacrev"),
    (
        ("autograd",),
        "def f(x):\n    y = x.exp()\n    return y.grad_fn(torch.ones_like(y))\n",
        ".grad_fn",
    ),
    ((), "def f(x):\n    return torch.load(x)\n", "torch.load"),
    ((), "def f(x):\n    return np.load(x, allow_pickle=True)\n", "numpy.load"),
    ((), "import typing\n\ndef f(g):\n    return typing.get_type_hints(g)\n", "get_type_hints"),
    (
        (),
        "def f(x):\n    g = (i for i in [x])\n    return g.gi_frame.f_back.f_globals\n",
        "gi_frame",
    ),
    (
        (),
        "def f(x):\n    try:\n        torch.nope\n    except AttributeError as e:\n"
        "        return e.obj.special\n",
        ".obj",
    ),
    ((), "def f(x, look=getattr):\n    return look(torch, 'exp')(x)\n", "getattr"),
    (
        (),
        "def f(x):\n    if False:\n        pass\n    t = [torch][0]\n    return t.exp(x)\n",
        "as a value",
    ),
    ((), "import sys\n\ndef f(x):\n    return sys.modules['torch'].exp(x)\n", "sys.modules"),
    (
        (),
        "def f(x):\n    match x:\n        case torch.Tensor(__class__=c):\n            return c\n",
        "__class__",
    ),
    ((), "import matplotlib.pyplot as plt\n", "answers may import only from"),
]
ALLOWED = [  # honest code the rule must let through
    ("softmax", "import sys\nimport math\n\ndef f(s):\n    return s - s.logsumexp(-1, True)\n"),
    ("autograd", "def f(x):\n    jacobian = torch.diag_embed(torch.cos(x))\n    return jacobian\n"),
    ("entropy", "def f(p):\n    return -torch.xlogy(p, p).sum(-1)\n"),
    (
        "softmax",
        "%%time\ndef f(s):\n    e = torch.exp(s - s.amax(-1, keepdim=True))\n"
        "    return e / e.sum(-1, keepdim=True)\n",
    ),
    ("softmax", "def f(s):\n    with torch.no_grad():\n        return torch.vmap(torch.exp)(s)\n"),
]


@pytest.mark.parametrize(
    "concepts, source, named", FAMILY_ATTACKS, ids=[a[2] for a in FAMILY_ATTACKS]
)
def test_the_reading_refuses_every_member_of_a_family_and_every_back_door(concepts, source, named):
    jacobian = {"jacobian": "torch.autograd.functional.jacobian"}
    problems = scan.scan(source, concepts, imports={**SETUP, **jacobian})
    assert problems and named in problems[0], problems
    assert problems[0].startswith("line "), "each refusal names its line"


@pytest.mark.parametrize("concept, source", ALLOWED)
def test_the_reading_lets_honest_code_through(concept, source):
    jacobian = {"jacobian": "torch.autograd.functional.jacobian"}
    assert scan.scan(source, (concept,), imports={**SETUP, **jacobian}) == []


def _in_a_notebook_cell(source: str, number: int):
    """``source`` run as a notebook cell is run (IPython keeps the cell's code under a file name of
    its own): the notebook's globals after it."""
    import linecache

    filename = f"/tmp/ipykernel_4242/{number}.py"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "__main__", "torch": torch}
    exec(compile(scan.python_of(source), filename, "exec"), namespace)
    return namespace


@pytest.mark.parametrize(
    "source",
    [
        READ_ATTACKS["built-in under another name"],
        READ_ATTACKS["a pydoc lookup"],
        READ_ATTACKS["a module handed around as a value"],
        "import pydoc\n\n" + HONEST_SOFTMAX,
    ],
)
def test_the_visible_check_refuses_with_the_grader_s_words(source):
    from attncourse.classroom.marking import static_problem
    from attncourse.exercises.engine import from_scratch_message

    namespace = _in_a_notebook_cell(source, abs(hash(source)) % 10**6)
    with pytest.raises(AssertionError) as visible:
        ch01.check_softmax(namespace[SOFTMAX])
    grader = from_scratch_message(
        SOFTMAX, static_problem([source], {}, ("softmax",), {"torch": "torch"})
    )
    assert str(visible.value) == grader


def test_a_refused_helper_from_another_cell_is_named_alike_by_the_check_and_the_grader():
    """An answer that calls the learner's own function from an earlier answer cell is read with
    it; the refusal names that function, whose cell the line number counts in."""
    from attncourse.classroom.marking import static_problem
    from attncourse.exercises.engine import from_scratch_message

    helper = "def smooth(s):\n    return torch.softmax(s, -1)\n"
    answer = "def stable_softmax(s):\n    return smooth(s)\n"
    namespace = _in_a_notebook_cell(helper, 4243)
    cell = _in_a_notebook_cell(answer, 4244)
    namespace[SOFTMAX] = types.FunctionType(cell[SOFTMAX].__code__, namespace, SOFTMAX)
    with pytest.raises(AssertionError) as visible:
        ch01.check_softmax(namespace[SOFTMAX])
    problem = static_problem([answer], {"smooth": helper}, ("softmax",), {"torch": "torch"})
    assert problem.startswith("in smooth, which it calls, line 2 uses torch.softmax"), problem
    assert str(visible.value) == from_scratch_message(SOFTMAX, problem)


def test_a_name_the_chapter_s_own_cells_define_is_refused_alike_by_the_check_and_the_grader():
    """Chapter 01's cells define T; an answer that uses it passes in the running notebook but
    would raise NameError when graded (only answer cells run): both refuse it, in one wording,
    and the chapter's instructor answers pass."""
    from attncourse.classroom import assignment
    from attncourse.classroom.marking import static_problem
    from attncourse.exercises.engine import from_scratch_message

    chapter = assignment.read(next((ROOT / "notebooks").glob("01_*.ipynb")))
    assert "T" in chapter.notebook and "torch" not in chapter.notebook
    answer = HONEST_SOFTMAX.replace("scores - scores.amax", "(1 / T) * scores - scores.amax")
    assert answer != HONEST_SOFTMAX
    namespace = _in_a_notebook_cell(answer, 4245)
    namespace["T"] = 1.0
    with pytest.raises(AssertionError) as visible:
        ch01.check_softmax(namespace[SOFTMAX])
    problem = static_problem([answer], {}, ("softmax",), {"torch": "torch"}, chapter.notebook)
    assert "uses T, which a cell of the chapter defines" in problem, problem
    assert str(visible.value) == from_scratch_message(SOFTMAX, problem)
    honest = _in_a_notebook_cell(HONEST_SOFTMAX, 4246)
    ch01.check_softmax(honest[SOFTMAX])


def test_the_names_a_chapter_s_own_cells_define():
    """Top-level assignments, loop variables, functions and classes of the cells without nbgrader
    metadata; not imports, not built-ins (a grader has them too), not answer or check cells."""
    cells = [
        {"cell_type": "code", "metadata": {}, "source": ["import math as m\n", "DT = m.pi\n"]},
        {"cell_type": "code", "metadata": {}, "source": "for i in range(2):\n    max = i\n"},
        {"cell_type": "code", "metadata": {}, "source": "def f():\n    y = 1\nclass C: pass\n"},
        {"cell_type": "code", "metadata": {"nbgrader": {}}, "source": "def my_f(): pass\n"},
        {"cell_type": "markdown", "metadata": {}, "source": "x = 1"},
    ]
    assert scan.notebook_names(cells) == {"DT", "i", "f", "C"}


def test_an_answer_that_is_not_python_is_said_to_be_so():
    """A syntax error is not a breach of the rule for answers: the note says what it is."""
    from attncourse.classroom.marking import unreadable_answer

    assert unreadable_answer([HONEST_SOFTMAX]) is None
    error = unreadable_answer([HONEST_SOFTMAX, "def stable_softmax(s)\n    return s\n"])
    assert error.startswith("SyntaxError: expected ':'"), error


def test_answers_read_in_two_threads_at_once_are_both_read_whole():
    """The grader reads submissions in threads, and CPython 3.11 counts ``ast.parse``'s depth per
    interpreter: a parse that runs while another is midway made that one fail ("SystemError: AST
    constructor recursion depth mismatch", a grade lost). Here a finalizer, run by the garbage
    collector while this thread builds a long answer's tree, lets another thread parse: it must
    wait its turn, and both answers are read."""
    import ast
    import gc
    import threading

    answer = "TABLE = [\n" + "".join(f"    [[{i}.0, 1.5], [2.5, {i}.25]],\n" for i in range(3000))
    answer += "]\n"
    midway, other_done, armed, errors = threading.Event(), threading.Event(), [True], []
    paused_midway = []

    class Pause:
        def __init__(self):
            self.cycle = self  # only the garbage collector frees it

        def __del__(self):
            if not armed[0]:
                return
            if sys._getframe(1).f_code is ast.parse.__code__:  # collected mid-parse
                armed[0] = False
                paused_midway.append(True)
                midway.set()
                other_done.wait(0.5)  # the other thread's turn, if it may take one now
            else:
                Pause()  # collected before the parse: another try

    def other():
        midway.wait(10)
        try:
            scan.python_of(answer)
        except SystemError as error:
            errors.append(error)
        other_done.set()

    thread = threading.Thread(target=other)
    thread.start()
    assert gc.isenabled()
    try:
        Pause()
        tree = scan.python_of(answer)
    except SystemError as error:
        errors.append(error)
    finally:
        armed[0] = False
        midway.set()
        thread.join(10)
    assert paused_midway and other_done.is_set()
    assert errors == []
    assert len(tree.body[0].value.elts) == 3000


STANDARD_IMPORTS = [  # what chapter 00 lets any answer use, imported by name in the cell
    "from functools import reduce\n",  # functools.reduce is _functools.reduce
    "from heapq import heappush\n",
    "from bisect import bisect_left\n",
]


@pytest.mark.parametrize("line", STANDARD_IMPORTS)
def test_the_visible_check_and_the_grader_let_the_standard_modules_through(line, capsys):
    from attncourse.classroom.marking import static_problem

    name = line.split()[-1]
    source = (
        line + "\n\ndef stable_softmax(s):\n"
        f"    assert {name} is not None\n"
        "    e = torch.exp(s - s.amax(-1, keepdim=True))\n"
        "    return e / e.sum(-1, keepdim=True)\n"
    )
    namespace = _in_a_notebook_cell(source, abs(hash(source)) % 10**6)
    ch01.check_softmax(namespace[SOFTMAX])
    assert capsys.readouterr().out.startswith(f"✓ {SOFTMAX}: all "), "the visible check refused"
    assert static_problem([source], {}, ("softmax",), {"torch": "torch"}) is None


# ------------------------------------------------------------------- identity and output


def _nbgrader_batch(root: Path, release: Path):
    """submitted/<student>/ps3/<notebook>: the assignment folder is not named like the notebook;
    ids that differ only in characters a cleaner would drop, formulas, bidi controls, bytes that
    are not UTF-8, and a student's odd files."""
    honest = {SOFTMAX: HONEST_SOFTMAX}
    students = {  # id -> answers (None: the release as it is)
        "bob": honest,
        "carol": None,
        "alice": honest,
        "alice\x7f": None,
        "bob_x": honest,
        "bob~x": None,
        '=HYPERLINK("x","y")': honest,
        "\u202eevil": None,
        os.fsdecode(b"dan\xff"): honest,
    }
    paths = {}
    for student, answers in students.items():
        folder = root / "submitted" / student / "ps3"
        paths[student] = _submission(release, folder, answers)
    (root / "submitted" / "bob" / "ps3" / "timestamp.txt").write_text("2024-05-30 13:52:29 UTC")
    odd = root / "submitted" / "erin" / "ps3"
    (odd / FIXTURE.name).mkdir(parents=True)  # a folder named like the notebook
    copy = odd / f"{FIXTURE.stem}-Copy1.ipynb"  # an honest upload, saved under another name
    shutil.copyfile(paths["bob"], copy)
    link = root / "submitted" / "mallory" / "ps3"
    link.mkdir(parents=True)
    (link / FIXTURE.name).symlink_to(paths["bob"])  # a classmate's work
    (root / "submitted" / "trent").symlink_to(root / "submitted" / "alice")  # a linked folder
    trent = root / "submitted" / "trent" / "ps3" / FIXTURE.name
    extra = [odd / FIXTURE.name, copy, link / FIXTURE.name, trent]
    return students, paths, extra


@pytest.fixture(scope="module")
def nbgrader_layout(released, tmp_path_factory):
    sandbox_or_skip()
    root = tmp_path_factory.mktemp("class")
    students, paths, extra = _nbgrader_batch(root, released[FIXTURE.name])
    out = root / "out"
    out.mkdir()
    command = [sys.executable, "-m", "attncourse.classroom.cli", "grade", *paths.values(), *extra]
    command += ["--source", FIXTURES, "-j", "2", "--timeout", str(TIMEOUT)]
    command += ["--csv", out / "grades.csv", "--json", out / "grades.json"]
    command += ["--feedback", out / "feedback"]
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=900, cwd=root
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return students, paths, extra, out, done


def test_a_batch_in_nbgrader_s_layout_gives_one_row_per_student(nbgrader_layout):
    students, _, _, out, _ = nbgrader_layout
    rows = list(csv.reader((out / "grades.csv").open(encoding="utf-8")))
    assert rows[0] == [
        "student",
        "assignment",
        f"test_{SOFTMAX}",
        f"test_{AVERAGE}",
        "total",
        "max_points",
        "percentage",
    ]
    by_student = {row[0]: row for row in rows[1:]}
    assert len(rows) - 1 == len(by_student) == len(students) + 3  # + erin, mallory, trent
    assert all(row[1] == "ps3" for row in rows[1:])
    # every submission answers exercise 2 (1 point); the honest ones exercise 1 too
    assert by_student["alice"][4:] == ["3", "3", "100.00"]
    assert by_student["alice\ufffd"][4:] == ["1", "3", "33.33"], "alice + DEL is another student"
    assert by_student["bob_x"][4] == "3" and by_student["bob~x"][4] == "1"
    assert by_student['\'=HYPERLINK("x","y")'][4] == "3", "a formula is shown as text"
    assert by_student["\ufffdevil"][4] == "1", "a bidi control is never written"
    assert by_student["dan\ufffd"][4] == "3", "bytes that are not UTF-8 are shown, not a crash"
    for row in rows:
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row)


def test_json_keeps_every_id_exactly_and_shows_no_invisible_character(nbgrader_layout):
    students, paths, _, out, _ = nbgrader_layout
    text = (out / "grades.json").read_text(encoding="utf-8")
    assert "\u202e" not in text and "\x7f" not in text
    data = json.loads(text)["submissions"]
    points = {d["student"]: d["points"] for d in data}
    for student, answers in students.items():
        assert points[student] == (3.0 if answers else 1.0), student


def test_feedback_is_laid_out_per_student_and_notebook_and_never_collides(nbgrader_layout):
    students, _, extra, out, done = nbgrader_layout
    reports = sorted((out / "feedback").rglob("*.html"))
    assert len(reports) == len(students) + len(extra)
    assert f"wrote {len(reports)} feedback reports" in done.stdout
    for report in reports:
        relative = report.relative_to(out / "feedback")
        assert len(relative.parts) == 3 and relative.parts[1] == "ps3", relative
        assert all(not part.startswith(".") for part in relative.parts)
        assert "\u202e" not in report.read_text(encoding="utf-8")


def test_an_odd_file_is_that_submission_s_zero_with_a_reason(nbgrader_layout):
    _, _, extra, out, done = nbgrader_layout
    data = {
        Path(d["submission"]).parts[-3:]: d
        for d in json.loads((out / "grades.json").read_text(encoding="utf-8"))["submissions"]
    }
    folder = data[("erin", "ps3", FIXTURE.name)]
    assert folder["points"] == 0 and "a folder, not a notebook" in folder["notes"][0]
    copy = data[("erin", "ps3", f"{FIXTURE.stem}-Copy1.ipynb")]
    assert f"it might be {FIXTURE.name}" in copy["notes"][0]
    linked = data[("mallory", "ps3", FIXTURE.name)]
    assert linked["points"] == 0 and "symbolic link" in linked["notes"][0]
    trent = data[("trent", "ps3", FIXTURE.name)]
    assert trent["points"] == 0 and "symbolic link" in trent["notes"][0]
    assert "note: not graded" in done.stdout


def test_the_nbgrader_export_columns_for_an_lms(nbgrader_layout, tmp_path):
    _, _, _, out, _ = nbgrader_layout
    args = _parser().parse_args(["grade", "x.ipynb", "--csv-format", "nbgrader"])
    assert args.csv_format == "nbgrader"
    results = read_results(out / "grades.json")
    write_csv(results, tmp_path / "nbgrader.csv", "nbgrader")
    rows = list(csv.DictReader((tmp_path / "nbgrader.csv").open(encoding="utf-8")))
    assert list(rows[0]) == [
        "assignment",
        "duedate",
        "timestamp",
        "student_id",
        "last_name",
        "first_name",
        "email",
        "raw_score",
        "late_submission_penalty",
        "score",
        "max_score",
    ]
    bob = next(r for r in rows if r["student_id"] == "bob")
    assert (bob["assignment"], bob["raw_score"], bob["score"], bob["max_score"]) == (
        "ps3",
        "3.0",
        "3.0",
        "3.0",
    )
    assert bob["timestamp"] == "2024-05-30 13:52:29 UTC"
    assert len(rows) == len({r["student_id"] for r in rows})


def test_two_copies_of_one_student_s_notebook_stop_the_batch_naming_both(released, tmp_path):
    release = released[FIXTURE.name]
    first = _submission(release, tmp_path / "submitted" / "bob" / "ps3", {})
    second = _submission(release, tmp_path / "elsewhere" / "submitted" / "bob" / "ps3", {})
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "attncourse.classroom.cli",
            "grade",
            str(first),
            str(second),
            "--source",
            str(FIXTURES),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and str(first) in done.stderr and str(second) in done.stderr


def test_an_instructor_s_own_mistake_still_stops_at_once(released, tmp_path):
    path = _submission(released[FIXTURE.name], tmp_path / "ann", {})
    for source, says in (
        (tmp_path / "nothing", "no instructor notebooks"),
        (ROOT / "notebooks", "check --source"),
    ):
        (tmp_path / "nothing").mkdir(exist_ok=True)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "attncourse.classroom.cli",
                "grade",
                str(path),
                "--source",
                str(source),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 2 and says in done.stderr, done.stderr


def test_a_student_s_own_odd_copies_cost_only_that_student(released, tmp_path):
    """A hard link to the instructor notebook, and two copies of one notebook inside one
    student's folder: each is that student's 0 with the reason; the class is graded."""
    sandbox_or_skip()
    source = tmp_path / "source"
    shutil.copytree(FIXTURES, source)
    class_ = tmp_path / "submitted"
    linked = class_ / "ann" / "ps1" / FIXTURE.name
    linked.parent.mkdir(parents=True)
    os.link(source / FIXTURE.name, linked)
    release = released[FIXTURE.name]
    first = _submission(release, class_ / "bob" / "ps1", {SOFTMAX: HONEST_SOFTMAX})
    second = _submission(release, class_ / "bob" / "ps1" / "backup", {})
    honest = _submission(release, class_ / "cy" / "ps1", {SOFTMAX: HONEST_SOFTMAX})
    ann, bob, bob_again, cy = _grade([linked, first, second, honest], limit=300, source=source)
    assert ann.points == 0 and "hard link" in ann.notes[0]
    for copy in (bob, bob_again):
        assert copy.points == 0 and str(first) in copy.notes[0] and str(second) in copy.notes[0]
    assert cy.points == 3.0


def test_the_student_is_the_outermost_folder_under_submitted(tmp_path):
    """A student's own folder named "submitted" inside their work makes them no one else."""
    from attncourse.classroom.grade import identity

    nested = tmp_path / "submitted" / "bob" / "ps1" / "submitted" / "alice" / "ps1" / FIXTURE.name
    assert identity(nested)[:2] == ("bob", "ps1")


# ------------------------------------------------------------------- a class always finishes

SPILL = {  # attacks on the grader itself, each beside an honest classmate
    "stalls the grader's pipe": (
        "import fcntl, sys, time\n"
        "import attncourse.classroom.protocol as p\n"
        "fcntl.fcntl(int(sys.argv[1]), 1031, 4096)  # F_SETPIPE_SZ: the smallest pipe\n"
        "p.receive = lambda *a, **k: time.sleep(10**6)  # and nobody reads it\n" + HONEST_SOFTMAX
    ),
    "answers with a header of 100 MB": (
        "import attncourse.classroom.protocol as p\n"
        "send = p.send\n"
        "def huge(fd, header, arrays=None, *rest, **options):\n"
        "    if 'results' in header:\n"
        "        header['padding'] = 'x' * (100 << 20)\n"
        "        options['header_limit'] = 1 << 30\n"
        "    return send(fd, header, arrays, *rest, **options)\n"
        "p.send = huge\n" + HONEST_SOFTMAX
    ),
}


def test_no_submission_can_stall_the_grader_or_change_a_classmate_s_result(released, tmp_path):
    sandbox_or_skip()
    release = released[FIXTURE.name]
    paths = [
        _submission(release, tmp_path / name, {SOFTMAX: source}) for name, source in SPILL.items()
    ]
    honest = _submission(release, tmp_path / "honest", {SOFTMAX: HONEST_SOFTMAX})
    started = time.monotonic()
    *attackers, classmate = _grade([*paths, honest], limit=600, timeout=8, read=False)
    assert time.monotonic() - started < 300
    for attacker in attackers:
        assert _points(attacker)[f"test_{SOFTMAX}"] == 0.0, _notes(attacker)
    assert "stopped after 8 s" in _notes(attackers[0])[f"test_{SOFTMAX}"]
    assert "too large" in _notes(attackers[1])[f"test_{SOFTMAX}"]
    assert classmate.points == 3.0, _notes(classmate)


def test_the_notebook_s_clock_holds_through_the_replay_after_a_hang(released, tmp_path):
    """The answer cell takes 6 s (within the 9 s a cell may take) and its function hangs: after
    the hang the sandbox restarts and replays the cell, and the notebook's 20 s run out in the
    replay, not after it (fresh timeouts for the replay made it about 25 s)."""
    sandbox_or_skip()
    slow = "import time\ntime.sleep(6)\n\ndef stable_softmax(s):\n    while True:\n        pass\n"
    path = _submission(released[FIXTURE.name], tmp_path / "slow", {SOFTMAX: slow})
    result = _grade([path], limit=300, timeout=9, budget=20)[0]
    assert result.seconds <= 20 + 3, f"a budget of 20 s took {result.seconds:.0f} s"
    assert "20 s were used up" in _notes(result)[f"test_{AVERAGE}"], _notes(result)


# ------------------------------------------------------------------- limits for the whole sandbox


def test_memory_is_bounded_for_all_of_a_sandbox_s_processes_together():
    """Five processes of 1.2 GB each: with a cgroup of 2048 MB at most one can hold its memory
    beside the runner (each alone is within the per-process limit)."""
    sandbox_or_skip()
    if cgroup.available() is None:
        if os.environ.get("CI") == "true" and os.getuid() == 0:
            raise AssertionError("CI runs as root: grading must make a cgroup there")
        pytest.skip("no cgroup can be made here: memory is limited per process only")
    cell = (
        "import os, subprocess, sys, time\n"
        "hold = 'import sys, time\\nx = b\"x\" * (1200 << 20)\\n'\n"
        'hold += \'open("/tmp/held" + sys.argv[1], "w").close()\\ntime.sleep(300)\\n\'\n'
        "children = [subprocess.Popen([sys.executable, '-c', hold, str(i)]) for i in range(5)]\n"
        "def held(i):\n"
        "    return os.path.exists(f'/tmp/held{i}')\n"
        "until = time.monotonic() + 120\n"
        "while time.monotonic() < until:\n"
        "    if all(c.poll() is not None or held(i) for i, c in enumerate(children)):\n"
        "        break\n"
        "    time.sleep(0.5)\n"
        "time.sleep(3)\n"
        "holding = sum(c.poll() is None and held(i) for i, c in enumerate(children))\n"
        "raise RuntimeError(f'holding={holding}')\n"
    )
    with sandbox.Session(sandbox=True, limits=sandbox.Limits(memory_mb=2048)) as session:
        session.request({"op": "run", "source": "x = 1"}, timeout=300)
        try:
            answer, _ = session.request({"op": "run", "source": cell}, timeout=240)
        except sandbox.Died:
            assert session.out_of_memory(), "the runner died for another reason"
            return
    holding = int(answer["error"].rsplit("=", 1)[1])
    assert holding <= 1, f"{holding} processes of 1.2 GB each held their memory together"


def test_the_sandbox_writes_to_a_tmpfs_of_its_own_not_the_host_s_disk():
    """All it may write is one tmpfs of ``disk_mb``, its working folder and /tmp together."""
    sandbox_or_skip()
    cell = (
        "import os\nwritten = 0\n"
        "for folder in ('/tmp', '/submission'):\n"
        "    for i in range(100):\n"
        "        try:\n"
        "            with open(f'{folder}/f{i}', 'wb') as f:\n"
        "                f.write(b'x' * (1 << 20))\n"
        "            written += 1\n"
        "        except OSError:\n"
        "            break\n"
        "raise RuntimeError(f'written={written} cwd={os.getcwd()}')\n"
    )
    with sandbox.Session(sandbox=True, limits=sandbox.Limits(disk_mb=64)) as session:
        answer, _ = session.request({"op": "run", "source": cell}, timeout=300)
    written = int(answer["error"].split("written=")[1].split()[0])
    assert 60 <= written <= 64, f"{written} MB written to a tmpfs of 64 MB"
    assert "--bind" not in sandbox.bwrap_command(None), "nothing of the host is writable inside"


# ------------------------------------------------------------------- a wheel install


@pytest.fixture(scope="module")
def wheel_install(wheel, tmp_path_factory):
    """The wheel installed in a fresh virtual environment of this module's own (its test writes
    into it): (its python, its site-packages)."""
    sandbox_or_skip()
    return install_wheel(wheel, tmp_path_factory.mktemp("venv"))


def test_under_a_wheel_install_the_sandbox_sees_no_instructor_notebook_nor_a_classmate(
    wheel_install, released
):
    """The wheel keeps the instructor notebooks inside the package, and this class keeps its
    submissions inside the environment: both are where the sandbox reads, and both are hidden."""
    python, purelib = wheel_install
    packaged = purelib / "attncourse" / "notebooks"
    assert (packaged / "01_attention_as_selection.ipynb").is_file()
    shutil.copyfile(FIXTURE, packaged / FIXTURE.name)  # graded with the default --source
    root = purelib.parent / "class-inside-the-environment"
    release = released[FIXTURE.name]
    classmate = _submission(release, root / "submitted" / "ann" / "ps1", {SOFTMAX: HONEST_SOFTMAX})
    reader = RUNTIME_ATTACKS["reads the instructor notebooks or a classmate's work"].replace(
        repr(str(DEFAULT_SOURCE)), repr(str(packaged))
    )
    attacker = _submission(
        release,
        root / "submitted" / "bob" / "ps1",
        {SOFTMAX: f"CLASSMATE = {str(classmate)!r}\n" + reader},
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ann, bob = _grade(
        [classmate, attacker], limit=600, source=packaged, read=False, python=python, env=env
    )
    assert ann.points == 3.0, _notes(ann)
    assert _points(bob) == {f"test_{SOFTMAX}": 2.0, f"test_{AVERAGE}": 1.0}, _notes(bob)
