"""Release: `attncourse release` on every instructor notebook (`start`: test_start.py).

Every test runs on each chapter notebook present in notebooks/ (so later chapters are covered as
they arrive) and on a small fixture notebook with two exercises (tests/classroom/fixtures).
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from classroom_helpers import (
    ALL,
    CHAPTERS,
    FIXTURE,
    FIXTURES,
    ROOT,
    cli,
    has_graded_cells,
    meta,
    read,
)

from attncourse.classroom import marking
from attncourse.classroom.release import MANIFEST


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
        assert "check_softmax(stable_softmax, seed=11)" in secret
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


@pytest.mark.parametrize(
    "notebook", [p for p in CHAPTERS if has_graded_cells(p)], ids=lambda p: p.stem
)
def test_a_released_check_lets_run_all_go_on_past_a_blank_exercise(notebook, released):
    """Every check cell keeps its raises-exception tag in the release: JupyterLab's Run All then
    goes on past a check that fails (its ✗ shown) instead of stopping at the first exercise."""
    checks = [c for c in read(released[notebook.name]).cells if meta(c).get("grade")]
    untagged = [
        meta(c)["grade_id"] for c in checks if "raises-exception" not in c.metadata.get("tags", [])
    ]
    assert checks and not untagged, f"check cells without the raises-exception tag: {untagged}"


@pytest.mark.parametrize("notebook", ALL, ids=lambda p: p.stem)
def test_no_released_answer_cell_uses_another_exercise_s_function(notebook, released):
    """Each exercise is judged on its own: the reading of an answer follows the learner's own
    functions it uses, so a released answer cell that called an earlier exercise's function
    (a default such as ``softmax_t = my_softmax_t``) would make that exercise's answer count
    in this one, even left blank."""
    student = read(released[notebook.name])
    earlier: dict[str, str] = {}  # function name -> grade id of the answer cell defining it
    for cell in student.cells:
        grade_id = meta(cell).get("grade_id")
        if not (meta(cell).get("solution") and cell.cell_type == "code"):
            continue
        used = {
            n for n in marking._called_names(cell.source) if earlier.get(n, grade_id) != grade_id
        }
        assert not used, f"{notebook.name}: the released {grade_id} uses {sorted(used)}"
        earlier.update(dict.fromkeys(marking._defined_functions(cell.source), grade_id))


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


def test_release_takes_a_chapter_by_number_or_by_name_from_anywhere(tmp_path):
    """``release 99``, ``release 99_pipeline_fixture.ipynb`` and the clone's path from another
    folder all name the notebook in ``--source``; a misspelt name says which one it might be."""
    for given in ("99", FIXTURE.name, f"notebooks/{FIXTURE.name}"):
        out = tmp_path / given.replace("/", "-")
        status, _, err = cli("release", given, "--out", out, "--source", FIXTURES)
        assert status == 0, err
        assert [p.name for p in out.glob("*.ipynb")] == [FIXTURE.name]
    typo = FIXTURE.name.replace("pipeline", "pipelin")
    status, _, err = cli("release", typo, "--out", tmp_path / "typo", "--source", FIXTURES)
    assert status == 2 and f"no such notebook (did you mean {FIXTURE.name}?)" in err


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
    (tmp_path / "submitted").mkdir()
    status, _, err = cli("grade", tmp_path / "submitted", "--source", FIXTURES)
    assert status == 2 and f"{tmp_path / 'submitted'} is a folder: give the notebooks in" in err
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
    status, _, err = cli("grade", FIXTURE, "--source", FIXTURES, "--jobs", "0")
    assert status == 2 and "--jobs" in err
    status, _, err = cli("grade", FIXTURE, "--source", FIXTURES, "--memory", "100")
    assert status == 2 and "--memory" in err


def test_the_command_is_installed_as_attncourse():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["attncourse"] == "attncourse.classroom.cli:main"
    done = subprocess.run(
        [sys.executable, "-m", "attncourse", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and all(
        c in done.stdout for c in ("release", "grade", "progress", "start")
    )
