"""Release and grading: `attncourse release / grade / start`, on every instructor notebook.

Every test runs on each chapter notebook present in notebooks/ (so later chapters are covered as
they arrive) and on a small fixture notebook with two exercises
(tests/classroom/fixtures/notebooks), which also carries the cheating submissions. Grading starts a
kernel per notebook, so the submissions are graded in a few batched calls shared by module-scoped
fixtures.
"""

import contextlib
import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from attncourse.classroom import integrity
from attncourse.classroom.cli import main
from attncourse.classroom.release import MANIFEST

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
FIXTURES = ROOT / "tests" / "classroom" / "fixtures" / "notebooks"
FIXTURE = FIXTURES / "99_pipeline_fixture.ipynb"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
ALL = CHAPTERS + [FIXTURE]
LOOP_TIMEOUT = 10  # seconds per cell; the kernel's first cell imports torch within it


def cli(*args):
    """Run the attncourse command in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(a) for a in args])
        except SystemExit as e:  # argparse
            status = e.code
    return status, out.getvalue(), err.getvalue()


def read(path):
    return nbformat.read(path, as_version=4)


def meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def has_graded_cells(path):
    return any(meta(c).get("grade") for c in read(path).cells)


def region_lines(nb, begin, end):
    """Stripped, non-empty lines strictly between the markers, in any cell."""
    lines = set()
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            if begin in line:
                inside = True
            elif end in line:
                inside = False
            elif inside and line.strip():
                lines.add(line.strip())
    return lines


def lines_outside(nb, regions):
    """Stripped lines of the notebook outside every marked region (these may be public)."""
    lines = set()
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            if any(b in line for b, _ in regions):
                inside = True
            elif any(e in line for _, e in regions):
                inside = False
            elif not inside:
                lines.add(line.strip())
    return lines


SOLUTION = ("### BEGIN SOLUTION", "### END SOLUTION")
HIDDEN = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")


# ---------------------------------------------------------------------------------- release


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """name -> student copy, for every chapter notebook and the fixture."""
    chapters_out = tmp_path_factory.mktemp("release-chapters")
    fixture_out = tmp_path_factory.mktemp("release-fixture")
    if CHAPTERS:
        status, out, err = cli("release", "--out", chapters_out)
        assert status == 0, err
    status, out, err = cli("release", "--out", fixture_out, "--source", FIXTURES)
    assert status == 0, err
    copies = {p.name: chapters_out / p.name for p in CHAPTERS}
    copies[FIXTURE.name] = fixture_out / FIXTURE.name
    assert all(p.is_file() for p in copies.values())
    return copies


@pytest.mark.parametrize("notebook", ALL, ids=lambda p: p.stem)
def test_no_solution_or_hidden_test_line_is_released(notebook, released):
    instructor, student = read(notebook), read(released[notebook.name])
    public = lines_outside(instructor, [SOLUTION, HIDDEN])
    secret = (region_lines(instructor, *SOLUTION) | region_lines(instructor, *HIDDEN)) - public
    student_lines = {line.strip() for cell in student.cells for line in cell.source.splitlines()}
    assert not secret & student_lines, f"released: {sorted(secret & student_lines)}"
    text = released[notebook.name].read_text()
    for marker in SOLUTION + HIDDEN:
        assert marker not in text
    if notebook == FIXTURE:  # the fixture has both kinds, so the check above is not empty
        assert "extreme = torch.tensor([[1e4, 0.0, -1e4]])  # hidden-only input" in secret
        assert "return weights @ values  # (T, d)" in secret


@pytest.mark.parametrize("notebook", ALL, ids=lambda p: p.stem)
def test_a_release_has_no_outputs_and_keeps_the_exercises(notebook, released):
    instructor, student = read(notebook), read(released[notebook.name])
    for cell in student.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    graded = [meta(c)["grade_id"] for c in instructor.cells if meta(c).get("grade")]
    assert [meta(c)["grade_id"] for c in student.cells if meta(c).get("grade")] == graded
    for cell in student.cells:
        if meta(cell).get("solution") and cell.cell_type == "code":
            assert "raise NotImplementedError()" in cell.source
    if notebook == FIXTURE:
        assert any(c.cell_type == "code" and c.outputs for c in instructor.cells)


def test_a_release_is_what_nbgrader_generate_assignment_writes(tmp_path, released):
    course = tmp_path / "course"
    (course / "source" / FIXTURE.stem).mkdir(parents=True)
    (course / "source" / FIXTURE.stem / FIXTURE.name).write_bytes(FIXTURE.read_bytes())
    bin_dir = str(Path(sys.executable).parent)
    env = {"PATH": bin_dir + ":/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nbgrader",
            "generate_assignment",
            FIXTURE.stem,
            f"--CourseDirectory.root={course}",
            f"--Exchange.root={tmp_path / 'exchange'}",
        ],
        cwd=course,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    expected = (course / "release" / FIXTURE.stem / FIXTURE.name).read_bytes()
    assert released[FIXTURE.name].read_bytes() == expected


def test_re_release_keeps_the_learner_s_edits_and_force_overwrites_them(tmp_path):
    source, out = tmp_path / "source", tmp_path / "out"
    source.mkdir()
    second = source / "98_second.ipynb"
    (source / FIXTURE.name).write_bytes(FIXTURE.read_bytes())
    second.write_bytes(FIXTURE.read_bytes())
    assert cli("release", "--out", out, "--source", source)[0] == 0
    assert json.loads((out / MANIFEST).read_text()).keys() == {FIXTURE.name, second.name}

    mine = read(out / FIXTURE.name)  # the learner works on one notebook ...
    mine.cells[3].source = mine.cells[3].source.replace(
        "raise NotImplementedError()", "return scores  # my try"
    )
    nbformat.write(mine, out / FIXTURE.name)
    edited = (out / FIXTURE.name).read_bytes()
    nb = read(second)  # ... and the instructor updates both
    nb.cells[0].source += "\n\nA new paragraph."
    nbformat.write(nb, second)
    nbformat.write(nb, source / FIXTURE.name)

    status, out_text, _ = cli("release", "--out", out, "--source", source)
    assert status == 0
    assert (out / FIXTURE.name).read_bytes() == edited  # kept
    assert re.search(rf"kept .*{FIXTURE.name}: it changed since it was released", out_text)
    assert "A new paragraph." in (out / second.name).read_text()  # untouched, so refreshed
    assert re.search(rf"refreshed .*{second.name}", out_text)

    status, out_text, _ = cli("release", "--out", out, "--source", source)
    assert (out / FIXTURE.name).read_bytes() == edited and "up to date" in out_text  # still kept

    status, out_text, _ = cli("release", "--out", out, "--source", source, "--force")
    assert status == 0 and "overwrote" in out_text
    assert "my try" not in (out / FIXTURE.name).read_text()
    assert "A new paragraph." in (out / FIXTURE.name).read_text()
    backups = list((out / ".attncourse-backup").glob("*.ipynb"))
    assert len(backups) == 1 and backups[0].read_bytes() == edited


def test_release_names_only_the_notebooks_given(tmp_path):
    status, out, _ = cli("release", FIXTURE, "--out", tmp_path)
    assert status == 0 and [p.name for p in tmp_path.glob("*.ipynb")] == [FIXTURE.name]
    assert f"wrote      {tmp_path / FIXTURE.name}" in out


def test_start_makes_the_workspace_once_and_opens_jupyter_lab_on_it(tmp_path):
    workspace = tmp_path / "ws"
    status, out, _ = cli(
        "start", "--workspace", workspace, "--source", FIXTURES, "--dry-run", "--no-browser"
    )
    assert status == 0
    assert (workspace / FIXTURE.name).is_file()
    command = out.strip().splitlines()[-1]
    assert re.search(r"jupyter lab --ServerApp.root_dir=\S*ws --no-browser$", command)
    mine = read(workspace / FIXTURE.name)
    mine.cells[3].source = "# my notes\n" + mine.cells[3].source
    nbformat.write(mine, workspace / FIXTURE.name)
    status, out, _ = cli("start", "--workspace", workspace, "--source", FIXTURES, "--dry-run")
    assert status == 0 and "kept" in out and "# my notes" in (workspace / FIXTURE.name).read_text()


# ------------------------------------------------------------------------------- bad input


def test_bad_input_is_a_clear_error_with_status_2(tmp_path):
    status, _, err = cli("release", tmp_path / "nope.ipynb", "--out", tmp_path / "out")
    assert status == 2 and "no such notebook" in err
    status, _, err = cli("release", "--out", tmp_path / "out", "--source", tmp_path)
    assert status == 2 and "no notebooks" in err
    (tmp_path / "broken.ipynb").write_text("{not json")
    status, _, err = cli("release", tmp_path / "broken.ipynb", "--out", tmp_path / "out")
    assert status == 2 and "not a readable notebook" in err
    status, _, err = cli("release", "--out", FIXTURES, "--source", FIXTURES)
    assert status == 2 and "where the instructor notebooks are" in err
    twice = read(FIXTURE)
    twice.cells[7].metadata.nbgrader["grade_id"] = "stable_softmax"
    nbformat.write(twice, tmp_path / "96_twice.ipynb")
    status, _, err = cli("release", tmp_path / "96_twice.ipynb", "--out", tmp_path / "out")
    assert status == 2 and "cells 4 and 8 share the grade_id 'stable_softmax'" in err
    outside = read(FIXTURE)
    outside.cells[8].source = "### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n"
    nbformat.write(outside, tmp_path / "95_outside.ipynb")
    status, _, err = cli("release", tmp_path / "95_outside.ipynb", "--out", tmp_path / "out")
    assert status == 2 and "Solution region detected in a non-solution cell" in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.ipynb"))

    status, _, err = cli("grade", tmp_path / "missing" / FIXTURE.name, "--source", FIXTURES)
    assert status == 2 and "no such submission" in err
    unknown = tmp_path / "42_unknown.ipynb"
    unknown.write_bytes(FIXTURE.read_bytes())
    status, _, err = cli("grade", unknown, "--source", FIXTURES)
    assert (
        status == 2
        and "no instructor notebook named 42_unknown.ipynb" in err
        and FIXTURE.name in err
    )

    plain = read(FIXTURE)
    for cell in plain.cells:
        cell.metadata.pop("nbgrader", None)
    (tmp_path / "src").mkdir()
    nbformat.write(plain, tmp_path / "src" / "97_plain.ipynb")
    nbformat.write(plain, tmp_path / "97_plain.ipynb")
    status, _, err = cli("grade", tmp_path / "97_plain.ipynb", "--source", tmp_path / "src")
    assert status == 2 and "has no graded cells" in err

    status, _, err = cli("grade", FIXTURE, "--source", FIXTURES, "--timeout", "0")
    assert status == 2 and "--timeout" in err
    status, _, err = cli(
        "grade", FIXTURE, "--source", FIXTURES, "--json", tmp_path / "no" / "such" / "r.json"
    )
    assert status == 2 and "no folder" in err
    status, _, err = cli("grade", "--source", FIXTURES)
    assert status == 2
    status, _, err = cli("grade", FIXTURE, "--source", FIXTURES, "--course-dir", FIXTURES)
    assert status == 2 and "new or empty folder" in err


def test_the_command_is_installed_as_attncourse():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["attncourse"] == "attncourse.classroom.cli:main"
    done = subprocess.run(
        [sys.executable, "-m", "attncourse", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and all(c in done.stdout for c in ("release", "grade", "start"))


# ----------------------------------------------------------------------- grading: chapters


@pytest.fixture(scope="module")
def chapter_grades(released, tmp_path_factory):
    """grade_id results for every chapter: the instructor version and its fresh release."""
    chapters = [p for p in CHAPTERS if has_graded_cells(p)]
    if not chapters:
        return {}
    report = tmp_path_factory.mktemp("grades") / "chapters.json"
    submissions = chapters + [released[p.name] for p in chapters]
    status, out, err = cli("grade", *submissions, "--json", report)
    assert status == 0, err
    results = json.loads(report.read_text())["submissions"]
    n = len(chapters)
    return {
        p.name: {"instructor": results[i], "release": results[n + i]}
        for i, p in enumerate(chapters)
    }


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_every_instructor_notebook_grades_full_marks_and_its_release_zero(notebook, chapter_grades):
    if not has_graded_cells(notebook):
        pytest.skip(f"{notebook.name} has no graded exercises")
    instructor, release = (
        chapter_grades[notebook.name]["instructor"],
        chapter_grades[notebook.name]["release"],
    )
    assert instructor["max_points"] > 0
    assert instructor["points"] == instructor["max_points"], instructor
    assert instructor["notes"] == [], instructor["notes"]  # the answer scan accepts the solutions
    assert release["points"] == 0, release


# ------------------------------------------------------------------------ grading: fixture


def solved(release, instructor):
    """The release with the instructor's solutions typed in (markers gone), as a learner would."""
    nb = read(release)
    answers = {
        meta(c)["grade_id"]: c.source for c in read(instructor).cells if meta(c).get("solution")
    }
    for cell in nb.cells:
        if meta(cell).get("solution"):
            cell.source = "\n".join(
                line
                for line in answers[meta(cell)["grade_id"]].splitlines()
                if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
            )
    return nb


def cell_index(nb, grade_id):
    return next(i for i, c in enumerate(nb.cells) if meta(c).get("grade_id") == grade_id)


WRONG_SOFTMAX = "def stable_softmax(scores):\n    return torch.zeros_like(scores)\n"
PATCHES = {
    "patch_module_attributes": (
        "import torch\nimport attncourse.exercises.ch01\n"
        "attncourse.exercises.ch01.check_softmax = lambda fn, **kw: None\n"
        "torch.allclose = lambda *a, **k: True\n\n" + WRONG_SOFTMAX
    ),
    "patch_with_setattr": (
        "import torch\nfrom attncourse.exercises import ch01 as exercises\n"
        "setattr(exercises, 'check_softmax', lambda fn, **kw: None)\n"
        "setattr(torch, 'allclose', lambda *a, **k: True)\n\n" + WRONG_SOFTMAX
    ),
}
ADDED_CELL_PATCH = (
    "import sys\n"
    "sys.modules['attncourse.exercises.ch01'].check_softmax = lambda fn, **kw: None\n"
    "sys.modules['torch'].allclose = lambda *a, **k: True\n"
)


def fixture_submissions(release):
    """variant -> notebook, each a learner's submission of the fixture."""
    variants = {
        "instructor": read(FIXTURE),
        "release": read(release),
        "solved": solved(release, FIXTURE),
    }

    nb = solved(release, FIXTURE)  # passes the visible check, fails the hidden test
    i = cell_index(nb, "stable_softmax")
    nb.cells[i].source = nb.cells[i].source.replace(
        "    shifted =",
        "    if scores.abs().max() > 5000:\n        return torch.zeros_like(scores)\n    shifted =",
    )
    variants["fails_hidden_test"] = nb

    nb = solved(release, FIXTURE)
    nb.cells[
        cell_index(nb, "stable_softmax")
    ].source = "def stable_softmax(scores):\n    raise ValueError('oops')\n"
    variants["raises"] = nb

    nb = solved(release, FIXTURE)
    nb.cells[cell_index(nb, "test_stable_softmax")].source = "print('all good')\n"
    variants["edited_test"] = nb

    nb = solved(release, FIXTURE)
    del nb.cells[cell_index(nb, "test_stable_softmax")]
    variants["deleted_test"] = nb

    for name, source in PATCHES.items():
        nb = solved(release, FIXTURE)
        nb.cells[cell_index(nb, "stable_softmax")].source = source
        variants[name] = nb

    nb = solved(release, FIXTURE)
    nb.cells[cell_index(nb, "stable_softmax")].source = WRONG_SOFTMAX
    nb.cells.insert(
        cell_index(nb, "test_stable_softmax"), nbformat.v4.new_code_cell(ADDED_CELL_PATCH)
    )
    variants["patch_in_an_added_cell"] = nb

    nb = solved(release, FIXTURE)  # editing a cell that is not an answer cell is checked too
    nb.cells[1].source += (
        "\nimport attncourse.exercises.ch01 as ex\nex.check_softmax = lambda fn, **kw: None\n"
        "torch.allclose = lambda *a, **k: True\n"
    )
    nb.cells[cell_index(nb, "stable_softmax")].source = WRONG_SOFTMAX
    variants["patch_in_the_setup_cell"] = nb
    return variants


@pytest.fixture(scope="module")
def fixture_grades(released, tmp_path_factory):
    """variant -> its graded result (one batched `attncourse grade` call)."""
    folder = tmp_path_factory.mktemp("fixture-submissions")
    paths = {}
    for variant, nb in fixture_submissions(released[FIXTURE.name]).items():
        (folder / variant).mkdir()
        paths[variant] = folder / variant / FIXTURE.name
        nbformat.write(nb, paths[variant])
    (folder / "unreadable").mkdir()
    paths["unreadable"] = folder / "unreadable" / FIXTURE.name
    paths["unreadable"].write_text("this is not a notebook")
    report = folder / "report.json"
    status, out, err = cli("grade", *paths.values(), "--source", FIXTURES, "--json", report)
    assert status == 0, err
    results = json.loads(report.read_text())["submissions"]
    assert [r["submission"] for r in results] == [str(p) for p in paths.values()]
    graded = dict(zip(paths, results))
    graded["_stdout"] = out
    return graded


def scores(result):
    return {e["grade_id"]: e["points"] for e in result["exercises"]}


def notes(result):
    return {e["grade_id"]: e["note"] for e in result["exercises"]}


FULL = {"test_stable_softmax": 2.0, "test_weighted_average": 1.0}
FIRST_LOST = {"test_stable_softmax": 0.0, "test_weighted_average": 1.0}


def test_fixture_instructor_version_and_solved_release_grade_full_marks(fixture_grades):
    for variant in ("instructor", "solved"):
        result = fixture_grades[variant]
        assert scores(result) == FULL and result["points"] == result["max_points"] == 3.0, result
        assert result["notes"] == [] and set(notes(result).values()) == {""}


def test_fixture_fresh_release_grades_zero(fixture_grades):
    result = fixture_grades["release"]
    assert scores(result) == {"test_stable_softmax": 0.0, "test_weighted_average": 0.0}
    assert "not implemented yet" in notes(result)["test_stable_softmax"]


def test_hidden_tests_are_restored_at_grading(fixture_grades):
    result = fixture_grades["fails_hidden_test"]
    assert scores(result) == FIRST_LOST, result
    assert notes(result)["test_stable_softmax"].startswith("AssertionError")


def test_a_submission_that_raises_loses_that_exercise_only(fixture_grades):
    result = fixture_grades["raises"]
    assert scores(result) == FIRST_LOST
    assert "ValueError: oops" in notes(result)["test_stable_softmax"]


def test_an_edited_test_cell_earns_nothing(fixture_grades):
    result = fixture_grades["edited_test"]
    assert scores(result) == FIRST_LOST
    assert "test cell was edited" in notes(result)["test_stable_softmax"]


def test_a_deleted_test_cell_earns_nothing(fixture_grades):
    result = fixture_grades["deleted_test"]
    assert scores(result) == FIRST_LOST
    assert "test cell was deleted" in notes(result)["test_stable_softmax"]


@pytest.mark.parametrize("variant", [*PATCHES, "patch_in_an_added_cell", "patch_in_the_setup_cell"])
def test_monkey_patching_the_checks_earns_nothing(variant, fixture_grades):
    result = fixture_grades[variant]
    assert scores(result) == FIRST_LOST, result
    assert "could change the checks" in notes(result)["test_stable_softmax"]
    assert any("monkey-patching" in n or "setattr" in n for n in result["notes"])


def test_an_unreadable_submission_is_a_zero_not_a_crash(fixture_grades):
    result = fixture_grades["unreadable"]
    assert result["points"] == 0 and result["max_points"] == 3.0
    assert "not a readable notebook" in result["notes"][0]


def test_grade_prints_points_per_exercise_and_the_total(fixture_grades):
    out = fixture_grades["_stdout"]
    assert re.search(r"instructor/99_pipeline_fixture.ipynb: 3 / 3 points", out)
    assert re.search(r"test_stable_softmax\s+2 / 2", out) and re.search(r"total\s+3 / 3", out)
    assert re.search(r"release/99_pipeline_fixture.ipynb: 0 / 3 points", out)


def test_an_infinite_loop_is_stopped_by_the_timeout_and_the_rest_is_graded(released, tmp_path):
    paths = []
    for name, source in {
        "loop_in_cell": "while True:\n    pass\n",
        "loop_in_function": "def stable_softmax(scores):\n    while True:\n        pass\n",
    }.items():
        nb = solved(released[FIXTURE.name], FIXTURE)
        nb.cells[cell_index(nb, "stable_softmax")].source = source
        (tmp_path / name).mkdir()
        paths.append(tmp_path / name / FIXTURE.name)
        nbformat.write(nb, paths[-1])
    report = tmp_path / "report.json"
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "attncourse",
            "grade",
            *map(str, paths),
            "--source",
            str(FIXTURES),
            "--timeout",
            str(LOOP_TIMEOUT),
            "--json",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    for result in json.loads(report.read_text())["submissions"]:
        assert scores(result) == FIRST_LOST, result
        assert f"longer than the {LOOP_TIMEOUT} s limit" in notes(result)["test_stable_softmax"]
        assert result["seconds"] < LOOP_TIMEOUT + 60  # one timeout, not one per remaining cell
    assert elapsed < 2 * (LOOP_TIMEOUT + 60) + 60


def test_a_kernel_that_ignores_the_interrupt_still_lets_the_run_finish(tmp_path):
    """A cell that ignores SIGINT keeps the kernel busy: earlier exercises keep their points."""
    nb = read(FIXTURE)
    stuck = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n"
    nb.cells.insert(cell_index(nb, "test_stable_softmax") + 1, nbformat.v4.new_code_cell(stuck))
    (tmp_path / "source").mkdir()
    nbformat.write(
        nb, tmp_path / "source" / "94_stuck.ipynb"
    )  # an instructor's cell, so it is run as is
    nbformat.write(nb, tmp_path / "94_stuck.ipynb")
    report = tmp_path / "report.json"
    status, out, err = cli(
        "grade",
        tmp_path / "94_stuck.ipynb",
        "--source",
        tmp_path / "source",
        "--timeout",
        LOOP_TIMEOUT,
        "--notebook-timeout",
        LOOP_TIMEOUT + 5,
        "--json",
        report,
    )
    assert status == 0, err
    result = json.loads(report.read_text())["submissions"][0]
    assert scores(result) == {"test_stable_softmax": 2.0, "test_weighted_average": 0.0}, result
    assert "longer than the" in notes(result)["test_weighted_average"]
    assert result["seconds"] < LOOP_TIMEOUT + 90


def test_the_notebook_budget_shortens_the_limits_of_the_remaining_cells(monkeypatch):
    from attncourse.classroom import course

    now = [100.0]
    monkeypatch.setattr(course.time, "monotonic", lambda: now[0])
    limits = course.CellTimeouts(per_cell=60, total=100)
    assert limits(None) == 60  # before a notebook starts
    limits.start()
    assert limits(None) == 60
    now[0] += 70
    assert limits(None) == 30
    now[0] += 100
    assert limits(None) == 1
    assert (
        course.default_notebook_timeout(60) == 600 and course.default_notebook_timeout(120) == 1200
    )


# --------------------------------------------------------------------------- answer scan


ACCEPTED = {
    "plain function": (
        "def f(s):\n"
        "    e = torch.exp(s - s.amax(-1, keepdim=True))\n"
        "    return e / e.sum(-1, keepdim=True)\n"
    ),
    "imports and item assignment": (
        "import math\nimport torch\nout = torch.zeros(3)\nout[0] = math.pi\nout.grad = None\n"
    ),
    "a module with self attributes": (
        "from torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.ones(2))\n        self._cache = None\n"
    ),
    "%timeit": "%timeit -n 3 f(x)\n",
    "re-import of a protected name": (
        "import torch\nfrom attncourse.exercises.ch01 import check_softmax\n"
    ),
    "an infinite loop": "while True:\n    pass\n",
    "a syntax error": "def f(:\n",
}
REJECTED = {
    "module attribute": ("torch.allclose = lambda *a, **k: True\n", "monkey-patching"),
    "module alias": (
        "import attncourse.exercises.ch01 as ex\nex.check_softmax = None\n",
        "monkey-patching",
    ),
    "setattr": ("setattr(torch, 'allclose', None)\n", "setattr"),
    "sys.modules": ("import sys\nsys.modules['torch'].allclose = None\n", "imports `sys`"),
    "alias by assignment": ("t = torch\nt.allclose = None\n", "attributes of `self`"),
    "shadowing a checked name": ("check_softmax = lambda f: None\n", "redefines `check_softmax`"),
    "def of a checked name": ("def check_softmax(f):\n    pass\n", "redefines `check_softmax`"),
    "import as": ("import numpy as torch\n", "redefines `torch`"),
    "global": (
        "def f():\n    global check_softmax\n    check_softmax = None\n",
        "global check_softmax",
    ),
    "globals()": ("globals()['check_softmax'] = None\n", "`globals`"),
    "__dict__": ("torch.__dict__['allclose'] = None\n", "__dict__"),
    "computed getattr": ("name = 'allclose'\nf = getattr(torch, name)\n", "computed name"),
    "torch.library": (
        "torch.library.impl('aten::allclose', 'CPU')(lambda *a: True)\n",
        "torch.library",
    ),
    "__torch_function__": (
        "class T(torch.Tensor):\n    def __torch_function__(cls, *a):\n        return True\n",
        "__torch_function__",
    ),
    "method called on its class": (
        "class A:\n    def f(self):\n        self.allclose = None\nA.f(torch)\n",
        "on the class itself",
    ),
    "shell": ("!pip uninstall -y attncourse\n", "shell command"),
    "%run": ("%run other.py\n", "%run"),
    "%%capture body": ("%%capture\ntorch.allclose = None\n", "monkey-patching"),
    "exec": ("exec('torch.allclose = None')\n", "`exec`"),
    "open": ("open('/tmp/x', 'w').write('x')\n", "`open`"),
    "writing a file": (
        "import numpy as np\nnp.savetxt('exercises.py', [], header='x = 1', comments='')\n",
        "savetxt",
    ),
    "private module": ("from torch import _C\n", "_C"),
    "frame": ("g = (x for x in [1])\nv = g.gi_frame.f_globals\n", "gi_frame"),
}
PROTECTED = {"torch": "torch", "check_softmax": "attncourse.exercises.ch01.check_softmax"}


@pytest.mark.parametrize("source", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_the_answer_scan_accepts_ordinary_answers(source):
    assert integrity.scan_code(source, PROTECTED) == []


@pytest.mark.parametrize("source, message", REJECTED.values(), ids=REJECTED.keys())
def test_the_answer_scan_rejects_tampering(source, message):
    problems = integrity.scan_code(source, PROTECTED, classes={"A", "T"})
    assert any(message in p for p in problems), problems


def test_protected_names_are_what_the_tests_read_from_the_notebook_s_cells():
    nb = read(FIXTURE)
    assert integrity.protected_names(nb) == {
        "torch": "torch"
    }  # the tests import their checks themselves
    nb.cells[4].source = nb.cells[4].source.replace(
        "from attncourse.exercises.ch01 import check_softmax\n", ""
    )
    assert integrity.protected_names(nb) == {
        "torch": "torch",
        "check_softmax": "attncourse.exercises.ch01.check_softmax",
    }
