"""`attncourse grade` and `attncourse progress` on every chapter: full marks for the instructor's
answers, zero for a fresh release, the results as a table, JSON and HTML, and one bad notebook
never stopping the class.

Grading runs each submission in a bubblewrap sandbox; without one these tests skip, except in CI
(CI=true), where they must run.
"""

import csv
import json
import re
import shutil

import pytest
from classroom_helpers import (
    ALL,
    CHAPTERS,
    FIXTURE,
    FIXTURES,
    cli,
    has_graded_cells,
    read,
    sandbox_or_skip,
)

from attncourse.classroom import sandbox
from attncourse.classroom.grade import grade, identity, student_of

GRADED = [p for p in ALL if has_graded_cells(p)]


@pytest.fixture(scope="module")
def class_results(released, tmp_path_factory):
    """Every graded notebook twice: the instructor's copy (alice) and a fresh release (bob)."""
    sandbox_or_skip()
    root = tmp_path_factory.mktemp("class")
    paths = []
    for notebook in GRADED:
        for student, source in (("alice", notebook), ("bob", released[notebook.name])):
            folder = root / "submitted" / student / notebook.stem  # nbgrader's layout
            folder.mkdir(parents=True)
            shutil.copyfile(source, folder / notebook.name)
            paths.append(folder / notebook.name)
    by_source = {notebook.name: notebook.parent for notebook in GRADED}
    results = []
    for source in sorted(set(by_source.values())):
        group = [p for p in paths if by_source[p.name] == source]
        results += grade(group, source=source, jobs=2, timeout=120, echo=lambda _: None)
    return root, results


@pytest.mark.parametrize("notebook", GRADED, ids=lambda p: p.stem)
def test_the_instructor_copy_earns_full_marks_and_a_fresh_release_zero(notebook, class_results):
    _, results = class_results
    mine = {r.student: r for r in results if r.notebook == notebook.name}
    alice, bob = mine["alice"], mine["bob"]
    assert alice.points == alice.max_points > 0, [(e.grade_id, e.note) for e in alice.exercises]
    assert bob.points == 0 and all("not implemented" in e.note for e in bob.exercises), [
        (e.grade_id, e.note) for e in bob.exercises
    ]
    instructor = read(notebook)
    points = sum(
        c.metadata.nbgrader.get("points", 0)
        for c in instructor.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    )
    assert alice.max_points == points


@pytest.mark.parametrize("notebook", [p for p in GRADED if p in CHAPTERS], ids=lambda p: p.stem)
def test_a_report_names_each_exercise_as_the_chapter_does_in_english_and_in_chinese(notebook):
    """The feedback's titles are the chapter's exercise headings, numbered in order (chapter
    00's demonstration is exercise 0); a Chinese submission's come from the chapter's catalogue
    (``练习 N · …``)."""
    from attncourse.classroom import assignment

    chapter = assignment.read(notebook)
    english, chinese = chapter.titles("en"), chapter.titles("zh_CN")
    assert list(english) == list(chinese) == [e.grade_id for e in chapter.exercises]
    first = 0 if notebook.name.startswith("00_") else 1
    for number, grade_id in enumerate(english, first):
        assert re.fullmatch(rf"Exercise {number} · \S.*", english[grade_id]), english[grade_id]
        assert re.fullmatch(rf"练习 {number} · \S.*", chinese[grade_id]), chinese[grade_id]


def test_every_chapter_with_exercises_is_graded():
    assert {p.name for p in CHAPTERS if has_graded_cells(p)} <= {p.name for p in GRADED}
    assert FIXTURE in GRADED


def test_the_student_is_named_by_the_submission_s_folder(tmp_path):
    assert student_of(tmp_path / "submitted" / "ada" / "01_x" / "01_x.ipynb") == "ada"
    assert student_of(tmp_path / "submitted" / "ada" / "ps1" / "01_x.ipynb") == "ada"
    assert student_of(tmp_path / "submitted" / "ada" / "01_x.ipynb") == "ada"
    assert student_of(tmp_path / "ada" / "01_x.ipynb") == "ada"
    assert identity(tmp_path / "submitted" / "ada" / "ps1" / "01_x.ipynb")[:2] == ("ada", "ps1")
    assert identity(tmp_path / "ada" / "01_x.ipynb")[:2] == ("ada", "01_x")


def test_csv_json_and_feedback_reports(released, tmp_path):
    sandbox_or_skip()
    for student, source in (("ann", FIXTURE), ("ben", released[FIXTURE.name])):
        (tmp_path / student).mkdir()
        shutil.copyfile(source, tmp_path / student / FIXTURE.name)
    table, report, folder = tmp_path / "grades.csv", tmp_path / "grades.json", tmp_path / "fb"
    status, out, err = cli(
        "grade", tmp_path / "ann" / FIXTURE.name, tmp_path / "ben" / FIXTURE.name,
        "--source", FIXTURES, "-j", "2", "--csv", table, "--json", report, "--feedback", folder,
    )  # fmt: skip
    assert status == 0, err
    assert "%|" not in err and "\r" not in err, err  # no progress bar: stderr is not a terminal
    rows = list(csv.reader(table.open()))
    assert rows[0] == [
        "student",
        "assignment",
        "test_stable_softmax",
        "test_weighted_average",
        "total",
        "max_points",
        "percentage",
    ]
    assert sorted(rows[1:]) == [
        ["ann", FIXTURE.stem, "2", "1", "3", "3", "100.00"],
        ["ben", FIXTURE.stem, "0", "0", "0", "3", "0.00"],
    ]
    data = json.loads(report.read_text())["submissions"]
    assert {d["student"]: d["points"] for d in data} == {"ann": 3.0, "ben": 0.0}
    ben = (folder / "ben" / FIXTURE.stem / f"{FIXTURE.stem}.html").read_text()
    assert "0 / 3 points" in ben and "stable_softmax is not implemented yet" in ben
    ann = (folder / "ann" / FIXTURE.stem / f"{FIXTURE.stem}.html").read_text()
    assert "3 / 3 points" in ann and "✓ all checks passed" in ann
    # each exercise by the heading the notebook gives it, not by its grade id
    for report in (ben, ann):
        assert "<td>Exercise 1: a numerically stable softmax (2 points)</td>" in report
        assert "<td>Exercise 2: attention as a weighted average (1 point)</td>" in report
        assert "test_stable_softmax" not in report
    assert [e["title"] for e in data[0]["exercises"]] == [
        "Exercise 1: a numerically stable softmax (2 points)",
        "Exercise 2: attention as a weighted average (1 point)",
    ]
    assert "ann" in out and "3 / 3 points" in out


def test_several_chapters_at_once_give_one_row_per_student_and_assignment(tmp_path):
    """A gradebook row per (student, assignment), not one sum; the maximum counts every notebook
    of the assignment graded in the batch, whether this student's was gradable or not."""
    from attncourse.classroom.grade import write_csv
    from attncourse.classroom.marking import Graded, Mark

    def result(student, assignment, notebook, points):
        r = Graded(f"{student}/{notebook}", notebook, student, assignment=assignment)
        r.exercises = [Mark(f"{notebook}_{i}", p, 2.0) for i, p in enumerate(points)]
        return r

    results = [
        result("ann", "ps1", "01_a.ipynb", [2, 1]),
        result("ann", "ps2", "02_b.ipynb", [2]),
        result("ben", "ps1", "01_a.ipynb", [0, 2]),
        Graded("ben/01_a-Copy1.ipynb", "01_a-Copy1.ipynb", "ben", assignment="ps2"),
    ]
    write_csv(results, tmp_path / "g.csv")
    rows = [r[:2] + r[-3:] for r in csv.reader((tmp_path / "g.csv").open())]
    assert rows == [
        ["student", "assignment", "total", "max_points", "percentage"],
        ["ann", "ps1", "3", "4", "75.00"],
        ["ann", "ps2", "2", "2", "100.00"],
        ["ben", "ps1", "2", "4", "50.00"],
        ["ben", "ps2", "0", "2", "0.00"],
    ]


def test_a_notebook_in_another_chapter_s_folder_costs_only_its_student(released, tmp_path, capsys):
    """In a ``chNN`` folder (``attncourse course``'s), another chapter's notebook is not graded,
    with the reason, and leaves the classmates' maximum alone; under a name that says no chapter
    (``ps1``) the instructor is told that the students handed in different notebooks. A
    ``-Copy1`` beside its original names it. Every submission not graded is listed again at the
    end."""
    from attncourse.classroom.grade import gradebook

    sandbox_or_skip()
    first, third = (next(p for p in CHAPTERS if p.name.startswith(n)) for n in ("01_", "03_"))
    layout = {
        ("bob", "ch03"): third,
        ("jack", "ch03"): first,  # misfiled
        ("ann", "ps1"): third,
        ("dan", "ps1"): first,
    }
    paths = []
    for (student, assignment), notebook in layout.items():
        folder = tmp_path / "submitted" / student / assignment
        folder.mkdir(parents=True)
        paths.append(folder / notebook.name)
        shutil.copyfile(released[notebook.name], paths[-1])
    copy = paths[0].with_name(third.stem + "-Copy1.ipynb")  # beside bob's original
    shutil.copyfile(paths[0], copy)
    results = grade([*paths, copy], source=first.parent, jobs=2, timeout=120, echo=lambda _: None)
    rows = {(r["student"], r["assignment"]): r for r in gradebook(results)}
    assert (
        f"it might be {third.name}, which its folder also holds and which is graded"
        in (results[-1].notes[0])
    )
    assert rows["bob", "ch03"]["max_points"] == rows["jack", "ch03"]["max_points"] == 11
    assert rows["jack", "ch03"]["total"] == 0 and rows["jack", "ch03"]["points"] == {}
    jack = next(r for r in results if r.student == "jack")
    assert f"in the folder of assignment 'ch03', which is {third.name}'s" in jack.notes[0]
    assert rows["ann", "ps1"]["max_points"] == rows["dan", "ps1"]["max_points"] == 13 + 11
    said = capsys.readouterr().err
    assert f"assignment 'ps1' has {first.name} from 1 of its 2 students (dan)" in said
    assert f"2 of 5 submissions were not graded (0 points each):\n  {paths[1]}: not graded" in said


def test_grading_against_the_student_copies_is_refused(released, tmp_path):
    """--source at the released copies would grade without hidden tests: full marks for a table
    of the visible answers. It stops, naming the mistake."""
    shutil.copyfile(FIXTURE, tmp_path / FIXTURE.name)
    status, out, err = cli(
        "grade", tmp_path / FIXTURE.name, "--source", released[FIXTURE.name].parent, "--no-sandbox"
    )
    assert status == 2, (out, err)
    assert "has no hidden tests: it is a student copy" in err and "--source" in err, err
    assert "points" not in out, out


def test_grading_without_bubblewrap_says_which_package_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    shutil.copyfile(FIXTURE, tmp_path / FIXTURE.name)
    status, _, err = cli("grade", tmp_path / FIXTURE.name, "--source", FIXTURES)
    assert status == 2 and "bubblewrap" in err and "--no-sandbox" in err


def test_grading_again_removes_only_that_student_s_earlier_reports_of_the_assignment(tmp_path):
    """A report of a copy since deleted, or under a suffix no longer needed, goes when its
    student's assignment is graded again; a classmate's report, another assignment's and the
    instructor's own files stay; a classmate's report where this one would go (a file system
    that ignores case shows Bob's as bob's) is not overwritten."""
    from attncourse.classroom import feedback
    from attncourse.classroom.marking import Graded, Mark

    def result(student, notebook, assignment="ps1"):
        r = Graded(f"submitted/{student}/{assignment}/{notebook}", notebook, student)
        r.assignment = assignment
        r.exercises = [Mark("ex1_test", 1.0, 1.0, "", "Exercise 1 · Softmax")]
        return r

    folder = tmp_path / "feedback"
    first = feedback.write(
        [
            result("alice", "01_a.ipynb"),
            result("alice", "01_a-Copy1.ipynb"),
            result("alice", "01_a.ipynb", "ps2"),
            result("Bob", "01_a.ipynb"),
            result("bob", "01_a.ipynb"),  # "Bob" and "bob": a suffix each
        ],
        folder,
    )
    assert [p.relative_to(folder).as_posix() for p in first[:3]] == [
        "alice/ps1/01_a.html",
        "alice/ps1/01_a-Copy1.html",
        "alice/ps2/01_a.html",
    ]
    assert all("~" in p.name for p in first[3:])
    notes = folder / "alice" / "ps1" / "marking-notes.html"
    notes.write_text("<p>the instructor's own file</p>")

    again = feedback.write([result("alice", "01_a.ipynb"), result("bob", "01_a.ipynb")], folder)
    assert [p.relative_to(folder).as_posix() for p in again] == [
        "alice/ps1/01_a.html",
        "bob/ps1/01_a.html",
    ]
    left = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.html"))
    assert left == sorted(
        [
            "alice/ps1/01_a.html",
            "alice/ps1/marking-notes.html",  # not a report: kept
            "alice/ps2/01_a.html",  # another assignment: kept
            first[3].relative_to(folder).as_posix(),  # Bob's, not graded again: kept
            "bob/ps1/01_a.html",  # bob's old suffixed report is gone
        ]
    )
    assert "Exercise 1 · Softmax" in again[0].read_text()

    # where bob's report would go lies Bob's (a file system that ignores case): kept, and
    # bob's goes beside it under a suffix
    again[1].write_bytes(first[3].read_bytes())
    beside = feedback.write([result("bob", "01_a.ipynb")], folder)[0]
    assert beside.parent == again[1].parent and "~" in beside.name
    assert again[1].read_bytes() == first[3].read_bytes()
