"""``attncourse grade``: a class's submissions graded headless, in parallel, outside their reach.

Each submission is matched by file name to an instructor notebook and marked by
``attncourse.classroom.marking`` in a sandbox of its own, ``jobs`` at a time; a submission that
cannot be read, hangs or crashes costs only its own exercises, never the batch. The results are
printed as they come, and written as JSON (``write_json``), as a CSV table with one row per
student and assignment (``write_csv``; ``csv_format="nbgrader"`` writes nbgrader's own export
columns) and as an HTML report per student and notebook (``attncourse.classroom.feedback``).

**Who a submission is.** In nbgrader's layout, ``submitted/<student>/<assignment>/<file>.ipynb``,
the student is always the folder right under ``submitted/`` and the assignment the folder under
it, whatever they are named; without a ``submitted/`` folder in its path
(``<student>/<file>.ipynb``) the student is the folder holding the notebook and the assignment
the notebook's name. Student ids are kept exactly as the folders spell them (cleaned only for
display, ``attncourse.classroom.output``). Two submissions of the same student, assignment and
notebook are an error naming both paths, never merged: from two folders taken for one student
(a layout ``grade`` cannot read) nothing is graded; from inside one student's folder that
student's copies score 0 with the reason, and the class is graded.

**What stops the batch, and what costs one submission.** An instructor's own mistake stops at
once, before anything is graded: no instructor notebooks in ``source``, no submission that exists,
none named like an instructor notebook (a wrong ``--source``), two folders taken for one student.
Anything about one submission is that submission's 0 with the reason, and the others
are graded: a path that does not exist, a folder named like a notebook, a symbolic link (the file
or one of its folders under the student's: a link to a classmate's work or to the instructor's
notebook is not the student's), a hard link to an instructor notebook, a file that is not a
notebook, or one named like no instructor notebook (the reason names the one it might be, such
as ``01_attention_as_selection.ipynb`` for ``01_attention_as_selection-Copy1.ipynb``).
"""

from __future__ import annotations

import concurrent.futures
import csv
import difflib
import hashlib
import json
import os
import queue
import re
import secrets
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import assignment as assignments
from .cgroup import available as cgroup_available
from .course import DEFAULT_TIMEOUT, Course
from .marking import Graded, Mark, mark
from .notebooks import (
    DEFAULT_SOURCE,
    NOTEBOOK_GLOB,
    UsageError,
    check_source,
    graded_cells,
    read_notebook,
)
from .output import clean, csv_cell, json_text, shown
from .sandbox import Limits, SandboxUnavailable, check_sandbox

SUBMITTED = "submitted"  # nbgrader's folder of submissions
CSV_FORMATS = ("attncourse", "nbgrader")
NBGRADER_COLUMNS = [
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
_TIMESTAMP = re.compile(  # nbgrader's "2024-05-30 13:52:29.404346 UTC"
    r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d{1,9})?( ?[A-Z]{1,5}|[+-]\d\d:?\d\d)?"
)


# ------------------------------------------------------------------------------- identity


def _absolute(path) -> Path:
    return Path(os.path.abspath(path))  # ".." resolved by name, links left as they are


def identity(path) -> tuple[str, str, Path]:
    """(student, assignment, the student's folder) of a submission (see the module docstring)."""
    absolute = _absolute(path)
    folders = absolute.parts[:-1]
    if SUBMITTED in folders[:-1]:  # the outermost: a student's own folder named so changes nothing
        at = folders.index(SUBMITTED)
        below = folders[at + 1 :]
        if below:
            assignment = below[1] if len(below) > 1 else absolute.stem
            return below[0], assignment, Path(*folders[: at + 2])
    return absolute.parent.name or absolute.stem, absolute.stem, absolute.parent


def student_of(path) -> str:
    """The student a submission belongs to: the folder under ``submitted/``, else its folder."""
    return identity(path)[0]


def assignment_notebook(assignment: str, known: list[str]) -> str | None:
    """The instructor notebook an assignment's name stands for: ``chNN`` (the folders of
    ``attncourse course``) or the notebook's own name; None for any other name (``ps1``)."""
    number = re.fullmatch(r"ch(\d\d)", assignment)
    for name in known:
        if Path(name).stem == assignment or (number and name.startswith(f"{number[1]}_")):
            return name
    return None


def _suggest(name: str, known: list[str]) -> str | None:
    """The instructor notebook a misnamed submission might be (``-Copy1``, `` (2)``, a typo)."""
    stem = Path(name).stem
    starts = [k for k in known if stem.startswith(Path(k).stem)]
    if starts:
        return max(starts, key=len)
    number = [k for k in known if k[:3] == name[:3] and name[:2].isdigit()]
    if len(number) == 1:
        return number[0]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return close[0] if close else None


NO_FILE = "there is no such file"
A_FOLDER = "it is a folder, not a notebook file"


def _problem(path: Path, student_folder: Path, known: list[str], inodes: dict) -> str | None:
    """Why ``path`` cannot be graded as a student's own notebook, or None."""
    absolute = _absolute(path)
    try:
        info = os.lstat(absolute)
    except FileNotFoundError:
        return NO_FILE
    except OSError as error:
        return f"it cannot be read ({error.strerror})"
    folder = absolute.parent
    while folder != student_folder.parent and folder != folder.parent:
        if folder.is_symlink():
            return (
                f"its folder {clean(folder, 200)} is a symbolic link: only a student's own files "
                "are graded"
            )
        folder = folder.parent
    if stat.S_ISLNK(info.st_mode):
        return (
            "it is a symbolic link (to a classmate's work, or to the instructor's notebook?): "
            "only a student's own files are graded"
        )
    if stat.S_ISDIR(info.st_mode):
        return A_FOLDER
    if not stat.S_ISREG(info.st_mode):
        return "it is not a plain file"
    if (info.st_dev, info.st_ino) in inodes:
        return "it is an instructor notebook itself (the same file, or a hard link to it)"
    if absolute.suffix != ".ipynb":
        return "it is not a notebook (a .ipynb file)"
    if absolute.name not in known:
        guess = _suggest(absolute.name, known)
        beside = guess and (absolute.parent / guess).exists()
        return (
            f"there is no instructor notebook named {clean(absolute.name, 120)}"
            + (f"; it might be {guess} (rename it to grade it)" if guess and not beside else "")
            + (
                f"; it might be {guess}, which its folder also holds and which is graded: if "
                "this copy is the student's work, put it in that one's place and grade again"
                if beside
                else ""
            )
            + f" (known: {', '.join(known)})"
        )
    return None


def _timestamp(folder: Path) -> str:
    """nbgrader's ``timestamp.txt`` beside a submission, when it holds a date and time."""
    try:
        fd = os.open(folder / "timestamp.txt", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        text = os.read(fd, 200).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)
    return text if _TIMESTAMP.fullmatch(text) else ""


# ------------------------------------------------------------------------------- shards


@dataclass
class Shard:
    """Shard ``index`` of ``count`` (``--shard K/N``, K counted from 0 as a Kubernetes Indexed
    Job's ``JOB_COMPLETION_INDEX`` and a Slurm array ``--array=0-(N-1)`` count): of the batch's
    students sorted by id, every N-th from the K-th. ``grade`` fills in the rest, which
    ``merge`` checks: the batch it was cut from and where each result stands in the whole."""

    index: int
    count: int
    batch: str = ""  # digest of the whole batch: every submission's identity, in the order given
    submissions: int = 0  # in the whole batch
    students: int = 0  # in the whole batch
    positions: list[int] = field(default_factory=list)  # each result's place in the whole batch

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
        if not match:
            raise UsageError(
                f"--shard {text}: expected K/N, shard K of N counted from 0 (0/3, 1/3 and 2/3 "
                "grade a class in three parts)"
            )
        index, count = int(match[1]), int(match[2])
        if count < 1:
            raise UsageError(f"--shard {text}: N, the number of shards, must be at least 1")
        if index >= count:
            raise UsageError(
                f"--shard {text}: K counts from 0 to N-1, so the shards of {count} are "
                f"0/{count} to {count - 1}/{count}"
            )
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def as_dict(self) -> dict:
        return {
            "index": self.index,
            "count": self.count,
            "batch": self.batch,
            "submissions": self.submissions,
            "students": self.students,
            "positions": self.positions,
        }


def _mixed_assignments(tasks: list[dict]) -> list[str]:
    """What to tell the instructor of each assignment whose students did not all hand in the same
    notebooks: every notebook graded in an assignment counts in each of its rows' maximum, so a
    notebook in the wrong folder lowers every classmate's percentage."""
    found: dict[str, dict[str, set]] = {}
    for task in tasks:
        found.setdefault(task["assignment"], {}).setdefault(task["notebook"], set())
        found[task["assignment"]][task["notebook"]].add(task["student"])
    warnings = []
    for assignment, notebooks in found.items():
        students = set().union(*notebooks.values())
        if len(notebooks) < 2 or all(len(s) == len(students) for s in notebooks.values()):
            continue
        counts = "; ".join(
            f"{name} from {len(who)} of its {len(students)} students"
            + (f" ({', '.join(shown(w) for w in sorted(who)[:5])})" if len(who) <= 5 else "")
            for name, who in sorted(notebooks.items(), key=lambda item: (len(item[1]), item[0]))
        )
        warnings.append(
            f"assignment {shown(assignment)!r} has {counts}: the points of each count in every "
            "row's max_points; if a notebook is in the wrong folder, move it and grade again"
        )
    return warnings


def _cut(tasks: list[dict], shard: Shard) -> list[dict]:
    """The tasks of ``shard`` (every task of its students), in the order given; ``shard`` is
    filled in with the batch's digest and each task's place in the whole."""
    identities = [[t["student"], t["assignment"], t["notebook"]] for t in tasks]
    batch = json.dumps(identities, ensure_ascii=True).encode()  # every id exactly, escaped
    students = sorted({t["student"] for t in tasks})
    mine = set(students[shard.index :: shard.count])
    shard.batch = hashlib.sha256(batch).hexdigest()
    shard.submissions, shard.students = len(tasks), len(students)
    shard.positions = [i for i, t in enumerate(tasks) if t["student"] in mine]
    return [tasks[i] for i in shard.positions]


# ------------------------------------------------------------------------------- grading


def prepare(notebooks: dict[str, Path]) -> dict[str, tuple]:
    """{file name: (Assignment, released cells)}: each instructor notebook read, its student
    version made by nbgrader (what submissions are compared with)."""
    prepared = {}
    with tempfile.TemporaryDirectory(prefix="attncourse-grade-") as tmp:
        course = Course(Path(tmp) / "course")
        for name, instructor in notebooks.items():
            nb = read_notebook(instructor)
            check_source(instructor, nb)
            if not graded_cells(nb):
                raise UsageError(f"{instructor}: has no graded cells, nothing to grade")
            assignment = assignments.read(instructor)
            if not any(check.hidden for e in assignment.exercises for check in e.checks):
                raise UsageError(
                    f"{instructor}: has no hidden tests: it is a student copy (what attncourse "
                    "release writes), and grading against it would skip them; --source must be "
                    "the folder of the instructor notebooks"
                )
            course.add_source(instructor)
            released = read_notebook(course.generate(instructor))
            prepared[name] = (assignment, [dict(c) for c in released.cells])
    return prepared


def hidden_seeds(assignment) -> dict:
    """Fresh seeds for the hidden checks of every exercise, drawn from the operating system's
    randomness at every grading run (the visible checks keep the notebook's seeds)."""
    return {
        (exercise.grade_id, check): secrets.randbits(62)
        for exercise in assignment.exercises
        for check in exercise.checks
        if check.hidden
    }


def _safely(task: dict, prepared, slots: queue.Queue, **options) -> Graded:
    """``mark`` one submission; whatever goes wrong stays in its own result."""
    assignment, release_cells = prepared
    slot = slots.get()
    try:
        return mark(
            task["path"],
            task["student"],
            assignment,
            release_cells,
            slot=slot,
            assignment_name=task["assignment"],
            **options,
        )
    except Exception as error:  # the grader's own failure: this submission only
        result = Graded(str(task["path"]), assignment.path.name, task["student"])
        result.assignment = task["assignment"]
        note = clean(f"not graded, the grader failed on it: {type(error).__name__}: {error}")
        result.notes.append(note)
        titles = assignment.titles()
        result.exercises = [
            Mark(e.grade_id, 0.0, e.points, note, titles[e.grade_id]) for e in assignment.exercises
        ]
        return result
    finally:
        slots.put(slot)


def _refused(task: dict, problem: str, prepared) -> Graded:
    """The result of a submission that is not graded: 0 with the reason."""
    result = Graded(str(task["path"]), task["notebook"], task["student"])
    result.assignment = task["assignment"]
    result.notes.append(clean(f"not graded: {problem}"))
    if prepared is not None:
        titles = prepared[0].titles()
        result.exercises = [
            Mark(e.grade_id, 0.0, e.points, clean(f"not graded: {problem}"), titles[e.grade_id])
            for e in prepared[0].exercises
        ]
    return result


def grade(
    submissions,
    *,
    source: Path = DEFAULT_SOURCE,
    timeout: float = DEFAULT_TIMEOUT,
    notebook_timeout: float | None = None,
    jobs: int | None = None,
    sandbox: bool = True,
    limits: Limits = Limits(),
    progress: bool | None = None,
    echo=print,
    shard: Shard | None = None,
) -> list[Graded]:
    """Grade each submission against the instructor notebook of the same file name, ``jobs`` at
    a time (default: one per CPU core); results in the order given (one per distinct path).
    With ``shard``, only the submissions of its students (``Shard``); the batch is checked whole
    all the same, so every shard stops on an instructor's mistake as a whole run does."""
    if not submissions:
        raise UsageError("no submissions given")
    if timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout}")
    if notebook_timeout is not None and notebook_timeout <= 0:
        raise UsageError(f"--notebook-timeout must be positive, got {notebook_timeout}")
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    instructor = {p.name: p for p in sorted(Path(source).glob(NOTEBOOK_GLOB)) if p.is_file()}
    if not instructor:
        raise UsageError(f"no instructor notebooks (NN_name.ipynb) in {source}: check --source")
    known = list(instructor)
    inodes = set()
    for path in instructor.values():
        info = path.stat()
        inodes.add((info.st_dev, info.st_ino))

    tasks, seen, owners = [], set(), {}
    for given in submissions:
        absolute = _absolute(given)
        if absolute in seen:  # the same file named twice is one submission
            continue
        seen.add(absolute)
        student, assignment, folder = identity(given)
        problem = _problem(Path(given), folder, known, inodes)
        notebook = absolute.name
        if problem and absolute.name not in known and assignment == absolute.stem:
            guess = _suggest(absolute.name, known)  # its row is the notebook it might be
            assignment = Path(guess).stem if guess else assignment
        designated = assignment_notebook(assignment, known)
        misfiled = designated not in (None, notebook)
        if problem is None and misfiled:
            problem = (
                f"it is {notebook}, in the folder of assignment {shown(assignment)!r}, which is "
                f"{designated}'s: move it to its own assignment's folder and grade it again"
            )
        key = (student, assignment, notebook)
        twice = None
        if key in owners and problem != NO_FILE:
            other = owners[key]
            both = (
                f"{clean(other['path'], 300)} and {clean(given, 300)} are both "
                f"{shown(student)!r}'s {clean(notebook, 120)} of {shown(assignment)!r}"
            )
            if other["folder"] != folder:  # two folders taken for one student: the layout
                raise UsageError(
                    f"{both}: grade one of them (the student is the folder under {SUBMITTED}/, "
                    "or the folder holding the notebook)"
                )
            twice = f"{both}: the student keeps one copy"  # in one student's folder: theirs
            other["problem"] = other["problem"] or twice
        task = {
            "path": Path(given),
            "student": student,
            "assignment": assignment,
            "notebook": notebook,
            "folder": folder,
            "problem": problem or twice,
            "misfiled": misfiled,
        }
        owners.setdefault(key, task)
        tasks.append(task)
    gradable = [t for t in tasks if t["problem"] is None]
    if not gradable:
        if all(t["problem"] == NO_FILE for t in tasks):
            raise UsageError(f"{tasks[0]['path']}: no such submission")
        if all(t["problem"] == A_FOLDER for t in tasks):
            folder = clean(tasks[0]["path"], 300).rstrip("/")
            raise UsageError(
                f"{folder} is a folder: give the notebooks in it ({folder}/*.ipynb), or in "
                "nbgrader's layout the notebooks of one assignment: submitted/*/ch01/*.ipynb"
            )
        if not any(t["notebook"] in known for t in tasks):
            raise UsageError(
                f"none of the submissions is named like an instructor notebook in {source}: "
                f"{clean(tasks[0]['path'], 300)}: {tasks[0]['problem']}; check --source"
            )
        raise UsageError(f"{tasks[0]['path']}: nothing to grade: {tasks[0]['problem']}")
    for warning in _mixed_assignments(gradable):
        print(f"attncourse grade: {warning}", file=sys.stderr)
    hidden = [Path(source), *instructor.values()]
    for task in tasks:  # the sandbox sees no submission of the batch, wherever they are kept
        hidden += [task["folder"], _absolute(task["path"])]
        if SUBMITTED in task["folder"].parts:
            hidden.append(task["folder"].parent)
    if shard is not None:
        tasks = _cut(tasks, shard)
        print(
            f"attncourse grade: shard {shard}: {len(tasks)} of the batch's {shard.submissions} "
            f"submissions ({len({t['student'] for t in tasks})} of {shard.students} students)",
            file=sys.stderr,
        )
        if not tasks:
            return []
    if sandbox:
        try:
            check_sandbox()
        except SandboxUnavailable as error:
            raise UsageError(str(error)) from None
        if cgroup_available() is None:
            print(
                "attncourse grade: no cgroup can be made here: memory is limited per process "
                f"({limits.memory_mb} MB each), not for a submission's processes together",
                file=sys.stderr,
            )
    needed = sorted({t["notebook"] for t in tasks if t["notebook"] in known})
    prepared = prepare({name: instructor[name] for name in needed})
    seeds = {name: hidden_seeds(prepared[name][0]) for name in prepared}
    for task in tasks:
        if task["problem"] is None and task["folder"] != _absolute(task["path"]).parent:
            task["timestamp"] = _timestamp(_absolute(task["path"]).parent)

    from tqdm.auto import tqdm

    show = progress if progress is not None else len(tasks) > 1 and sys.stderr.isatty()
    bar = tqdm(total=len(tasks), desc="grading", unit="notebook", file=sys.stderr, disable=not show)
    write = bar.write if show else echo
    slots: queue.Queue = queue.Queue()
    for slot in range(jobs):
        slots.put(slot)
    options = {
        "sandbox": sandbox,
        "timeout": timeout,
        "budget": notebook_timeout,
        "limits": limits,
        "hidden_paths": tuple(dict.fromkeys(hidden)),
    }
    results: list[Graded | None] = [None] * len(tasks)
    for index, task in enumerate(tasks):
        if task["problem"] is not None:  # a misfiled notebook's points are not its folder's
            own = None if task["misfiled"] else prepared.get(task["notebook"])
            results[index] = _refused(task, task["problem"], own)
            write(format_result(results[index]))
            bar.update()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {
            pool.submit(
                _safely,
                task,
                prepared[task["notebook"]],
                slots,
                hidden_seeds=seeds[task["notebook"]],
                **options,
            ): index
            for index, task in enumerate(tasks)
            if task["problem"] is None
        }
        for future in concurrent.futures.as_completed(futures):
            result = results[futures[future]] = future.result()
            result.timestamp = tasks[futures[future]].get("timestamp", "")
            write(format_result(result))
            bar.update()
    bar.close()
    ungraded = [r for r in results if any(n.startswith("not graded") for n in r.notes)]
    if ungraded:
        print(
            f"attncourse grade: {len(ungraded)} of {len(results)} submissions were not graded "
            "(0 points each):",
            file=sys.stderr,
        )
        for result in ungraded:
            print(f"  {clean(result.submission, 300)}: {result.notes[0]}", file=sys.stderr)
    return results


# ------------------------------------------------------------------------------- reports


def _number(x: float) -> str:
    return f"{x:g}"


def format_result(result: Graded) -> str:
    width = max([len(e.grade_id) for e in result.exercises] + [5])
    lines = [
        f"{clean(result.submission, 300)} ({shown(result.student)}): {_number(result.points)} / "
        f"{_number(result.max_points)} points ({result.seconds:.1f} s)"
    ]
    for e in result.exercises:
        note = f"   {clean(e.note, 300)}" if e.note else ""
        lines.append(
            f"  {e.grade_id:<{width}}  {_number(e.points):>4} / {_number(e.max_points):<4}{note}"
        )
    lines.append(
        f"  {'total':<{width}}  {_number(result.points):>4} / {_number(result.max_points)}"
    )
    lines += [f"  note: {clean(n, 300)}" for n in result.notes]
    return "\n".join(lines)


def write_json(results: list[Graded], path: Path, timeout, shard: Shard | None = None) -> None:
    """Everything, with student ids exactly as given (invisible characters escaped); a shard's
    JSON also says which shard it is and of what batch (what ``merge`` reads)."""
    data = {"timeout": timeout, "submissions": [r.as_dict() for r in results]}
    if shard is not None:
        data["shard"] = shard.as_dict()
    Path(path).write_text(json_text(data), encoding="utf-8")


def _read_json(path: Path) -> dict:
    """What ``write_json`` wrote, checked enough to be merged."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, ValueError) as error:
        raise UsageError(f"{path}: not the JSON of attncourse grade ({error})") from None
    try:
        data["results"] = [Graded.from_dict(d) for d in data["submissions"]]
    except (KeyError, TypeError, ValueError) as error:
        raise UsageError(
            f"{path}: not the JSON of attncourse grade (no submission list it can read: "
            f"{type(error).__name__}: {error})"
        ) from None
    return data


def read_results(path: Path) -> list[Graded]:
    """The results in a JSON file that ``write_json`` wrote."""
    return _read_json(path)["results"]


def merge(paths) -> tuple[list[Graded], float]:
    """(results, timeout) of a batch graded in shards: the shards' JSON files joined, in the
    order a whole run gives. Every shard of one batch must be there exactly once."""
    if not paths:
        raise UsageError("no shards given: name the JSON file of every shard")
    shards = {}
    first = None
    for path in map(Path, paths):
        data = _read_json(path)
        info = data.get("shard")
        if not isinstance(info, dict):
            raise UsageError(
                f"{path}: graded whole, not as a shard (attncourse grade --shard K/N): "
                "there is nothing to merge it with"
            )
        try:
            shard = Shard(**info)
        except TypeError as error:
            raise UsageError(f"{path}: its shard is not one grade wrote ({error})") from None
        if len(shard.positions) != len(data["results"]):
            raise UsageError(
                f"{path}: shard {shard} lists {len(shard.positions)} places for "
                f"{len(data['results'])} results: the file was changed"
            )
        if first is None:
            first = (path, shard, data["timeout"])
        elif shard.count != first[1].count:
            raise UsageError(
                f"{first[0]} is shard {first[1]} but {path} is shard {shard}: the shards of one "
                "batch share N"
            )
        elif shard.batch != first[1].batch:
            raise UsageError(
                f"{first[0]} (shard {first[1]}) and {path} (shard {shard}) were cut from "
                "different batches (not the same submissions): give every shard the same "
                "submissions"
            )
        elif data["timeout"] != first[2]:
            raise UsageError(
                f"{first[0]} was graded with --timeout {first[2]} and {path} with "
                f"{data['timeout']}: grade every shard alike"
            )
        if shard.index in shards:
            raise UsageError(f"shard {shard} is given twice: {shards[shard.index][0]} and {path}")
        shards[shard.index] = (path, shard, data["results"])
    count = first[1].count
    missing = [f"{k}/{count}" for k in range(count) if k not in shards]
    if missing:
        raise UsageError(
            f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of this batch "
            f"{'are' if len(missing) > 1 else 'is'} missing: grade "
            f"{'them' if len(missing) > 1 else 'it'} with --shard and merge every shard"
        )
    placed: dict[int, tuple[Path, Graded]] = {}
    for path, shard, results in shards.values():
        for position, result in zip(shard.positions, results):
            if position in placed:
                raise UsageError(
                    f"{path}: shard {shard} overlaps {placed[position][0]}: both hold "
                    f"{clean(result.submission, 300)}"
                )
            if not 0 <= position < shard.submissions:
                raise UsageError(f"{path}: shard {shard} places a result outside its batch")
            placed[position] = (path, result)
    if len(placed) != first[1].submissions:
        raise UsageError(
            f"the shards hold {len(placed)} of the batch's {first[1].submissions} submissions"
        )
    return [placed[p][1] for p in sorted(placed)], first[2]


def gradebook(results: list[Graded]) -> list[dict]:
    """One row per student and assignment, in the order first met: the points of each exercise,
    the total, the maximum (every notebook of the assignment graded in this batch, whether this
    student's was gradable or not) and the percentage."""
    maxima: dict[str, dict[str, float]] = {}
    for result in results:
        if result.exercises:
            maxima.setdefault(result.assignment, {})[result.notebook] = result.max_points
    rows: dict[tuple[str, str], dict] = {}
    for result in results:
        row = rows.setdefault(
            (result.student, result.assignment),
            {
                "student": result.student,
                "assignment": result.assignment,
                "points": {},
                "timestamp": "",
            },
        )
        for e in result.exercises:
            row["points"][e.grade_id] = e.points
        row["timestamp"] = row["timestamp"] or getattr(result, "timestamp", "")
    for row in rows.values():
        row["total"] = sum(row["points"].values())
        row["max_points"] = sum(maxima.get(row["assignment"], {}).values())
    return list(rows.values())


def write_csv(results: list[Graded], path: Path, csv_format: str = "attncourse") -> None:
    """The gradebook as CSV: ``attncourse`` (student, assignment, one column per exercise, total,
    max_points, percentage) or ``nbgrader`` (nbgrader's export columns). Every text cell is
    shown without invisible characters and never as a formula (``attncourse.classroom.output``)."""
    if csv_format not in CSV_FORMATS:
        raise UsageError(f"--csv-format must be one of {', '.join(CSV_FORMATS)}")
    rows = gradebook(results)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        if csv_format == "nbgrader":
            writer.writerow(NBGRADER_COLUMNS)
            for row in rows:
                total, maximum = float(row["total"]), float(row["max_points"])
                writer.writerow(
                    [
                        csv_cell(shown(row["assignment"])),
                        "",
                        csv_cell(row["timestamp"]),
                        csv_cell(shown(row["student"])),
                        "",
                        "",
                        "",
                        str(total),
                        "0.0",
                        str(total),
                        str(maximum),
                    ]
                )
            return
        columns = list(dict.fromkeys(g for row in rows for g in row["points"]))
        writer.writerow(
            [
                "student",
                "assignment",
                *(csv_cell(shown(c)) for c in columns),
                "total",
                "max_points",
                "percentage",
            ]
        )
        for row in rows:
            maximum = row["max_points"]
            percentage = f"{100 * row['total'] / maximum:.2f}" if maximum else ""
            writer.writerow(
                [
                    csv_cell(shown(row["student"])),
                    csv_cell(shown(row["assignment"])),
                    *(_number(row["points"][c]) if c in row["points"] else "" for c in columns),
                    _number(row["total"]),
                    _number(maximum),
                    percentage,
                ]
            )
