"""Student releases and headless grading of the course's notebooks, built on nbgrader.

The notebooks in ``notebooks/`` are nbgrader *source* notebooks (solutions between
``### BEGIN SOLUTION`` / ``### END SOLUTION``, hidden tests between ``### BEGIN HIDDEN TESTS`` /
``### END HIDDEN TESTS``). Both commands run nbgrader itself in a temporary course directory
(``source/``, ``release/``, ``submitted/``, ``autograded/`` and an SQLite gradebook), one
assignment per notebook, named after the notebook:

* ``release``: ``nbgrader generate_assignment``; its output is copied unchanged, so a student copy
  is exactly what an nbgrader course would hand out. A manifest of what was written
  (``.attncourse-release.json`` in the output folder) keeps a learner's changes from ever being
  overwritten.
* ``grade``: ``generate_assignment`` on the matching instructor notebook (matched by file name),
  then ``nbgrader autograde`` on the submission, which restores hidden tests and runs each cell
  with a timeout (interrupting the kernel, then going on). Before that, ``attncourse.integrity``
  zeroes exercises whose test cell was deleted or edited and neutralises answer cells that could
  tamper with the checks. The learner's code runs in a Jupyter kernel (a separate process) whose
  working directory is inside the temporary course.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from . import integrity

_REPOSITORY_NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
# the clone's notebooks/ for an editable install (pip install -e .), else ./notebooks
DEFAULT_SOURCE = _REPOSITORY_NOTEBOOKS if _REPOSITORY_NOTEBOOKS.is_dir() else Path("notebooks")
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
MANIFEST = ".attncourse-release.json"
BACKUPS = ".attncourse-backup"
DEFAULT_TIMEOUT = 60
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


class UsageError(Exception):
    """Bad input (a missing file, an unknown notebook, ...): the command exits with status 2."""


# ------------------------------------------------------------------------------- nbgrader


def _prepare_environment() -> None:
    """nbgrader runs ``alembic`` and starts kernels by name: use this interpreter's tools first."""
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + path


@contextlib.contextmanager
def _quiet():
    """nbgrader's own log is captured per call; silence its SQLAlchemy and deprecation warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        previous = logging.root.level
        logging.root.setLevel(logging.ERROR)
        try:
            yield
        finally:
            logging.root.setLevel(previous)


class CellTimeouts:
    """Each cell's time limit: ``per_cell`` seconds, within a budget for the whole notebook.

    A kernel stopped by a timeout is interrupted and grading goes on; a kernel that ignores the
    interrupt (a long C call, a handler for SIGINT) stays busy, so each remaining cell would wait
    its full limit. Once the notebook's budget is spent, the remaining cells get 1 s each.
    """

    def __init__(self, per_cell: int, total: int):
        self.per_cell, self.total = per_cell, total
        self.deadline = None

    def start(self) -> None:
        self.deadline = time.monotonic() + self.total

    def __call__(self, cell=None) -> int:
        if self.deadline is None:
            return self.per_cell
        return max(1, min(self.per_cell, int(self.deadline - time.monotonic())))


def default_notebook_timeout(timeout: int) -> int:
    return max(600, 10 * timeout)


class Course:
    """A throw-away nbgrader course directory with one assignment per notebook."""

    def __init__(self, root: Path, timeout: int | None = DEFAULT_TIMEOUT, notebook_timeout: int | None = None):
        from nbgrader.apps.api import NbGraderAPI
        from traitlets.config import Config

        _prepare_environment()
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        config = Config()
        config.CourseDirectory.root = str(self.root)
        config.Exchange.root = str(self.root / "exchange")  # not /srv/nbgrader/exchange
        self.cell_timeouts = None
        if timeout is not None:
            total = notebook_timeout or default_notebook_timeout(timeout)
            self.cell_timeouts = CellTimeouts(timeout, total)
            config.Execute.timeout_func = self.cell_timeouts
        config.Execute.timeout = timeout
        config.Execute.interrupt_on_timeout = True
        config.Execute.raise_on_iopub_timeout = False  # a kernel that ignores the interrupt: go on
        config.Execute.extra_arguments = ["--HistoryManager.hist_file=:memory:", "--IPKernelApp.log_level=ERROR"]
        with _quiet():
            self.api = NbGraderAPI(config=config)
            _create_gradebook(self.root / "gradebook.db", self.api.coursedir.db_url)
        self.timeout = timeout

    def assignment(self, notebook: Path) -> str:
        return notebook.stem

    def add_source(self, notebook: Path, kernelspec: bool = False) -> Path:
        """Put an instructor notebook into ``source/<name>/``; ``kernelspec``: run it with this Python."""
        name = self.assignment(notebook)
        dest = self.root / "source" / name / notebook.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if kernelspec:
            nb = nbformat.read(notebook, as_version=4)
            nb.metadata["kernelspec"] = dict(KERNELSPEC)
            nbformat.write(nb, dest)
        else:
            shutil.copyfile(notebook, dest)
        return dest

    def generate(self, notebook: Path) -> Path:
        """``nbgrader generate_assignment``: the student version of a source notebook."""
        name = self.assignment(notebook)
        with _quiet():
            result = self.api.generate_assignment(name)
        released = self.root / "release" / name / notebook.name
        if not result.get("success") or not released.exists():
            raise UsageError(
                f"{notebook}: nbgrader cannot make a student version of it:\n{_nbgrader_error(result)}"
            )
        return released

    def submit(self, notebook_name: str, student: str, nb) -> Path:
        assignment = Path(notebook_name).stem
        dest = self.root / "submitted" / student / assignment / notebook_name
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, dest)
        return dest

    def autograde(self, notebook_name: str, student: str) -> dict:
        if self.cell_timeouts is not None:
            self.cell_timeouts.start()
        with _quiet():
            return self.api.autograde(Path(notebook_name).stem, student)

    def grades(self, notebook_name: str, student: str) -> dict[str, tuple[float, float, bool]]:
        from nbgrader.api import Gradebook

        name = Path(notebook_name).stem
        with _quiet(), Gradebook(self.api.coursedir.db_url) as gb:
            submitted = gb.find_submission_notebook(name, name, student)
            return {g.name: (float(g.score or 0.0), float(g.max_score), bool(g.needs_manual_grade))
                    for g in submitted.grades}

    def autograded(self, notebook_name: str, student: str) -> Path:
        return self.root / "autograded" / student / Path(notebook_name).stem / notebook_name


def _gradebook_template() -> Path:
    import nbgrader

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attncourse"
    return cache / f"gradebook-nbgrader-{nbgrader.__version__}.db"


def _create_gradebook(path: Path, db_url: str) -> None:
    """Start from an empty gradebook that nbgrader made before, if there is one.

    A new gradebook asks ``alembic heads`` (a subprocess that imports nbgrader: seconds) for the
    schema version; it is the same for every gradebook of one nbgrader version, so the first
    empty gradebook is kept under ~/.cache/attncourse and copied after that.
    """
    from nbgrader.api import Gradebook

    template = _gradebook_template()
    if template.is_file():
        with contextlib.suppress(OSError):
            shutil.copyfile(template, path)
            return
    with Gradebook(db_url):
        pass
    with contextlib.suppress(OSError):
        template.parent.mkdir(parents=True, exist_ok=True)
        partial = template.with_name(f"{template.name}.{os.getpid()}.tmp")
        shutil.copyfile(path, partial)
        os.replace(partial, template)


def _nbgrader_error(result: dict) -> str:
    log = result.get("log") or ""
    if "Kernel died" in log:
        return "the kernel died while running it (the notebook ended or crashed Python)"
    noise = ("see the the above traceback", "There was an error processing", "Traceback (most recent call last)")
    lines = [line for line in log.splitlines() if line.startswith("[ERROR]") and not any(n in line for n in noise)]
    if lines:
        return "\n".join(lines[-6:])
    error = (result.get("error") or "").strip().splitlines()
    return error[-1] if error else "(no message from nbgrader)"


# ------------------------------------------------------------------------------- notebooks


def _read(path: Path):
    try:
        return nbformat.read(path, as_version=4)
    except Exception as e:
        raise UsageError(f"{path}: not a readable notebook ({type(e).__name__}: {e})") from None


def _graded_cells(nb) -> list:
    return [c for c in nb.cells if (c.get("metadata", {}).get("nbgrader") or {}).get("grade")]


def _has_nbgrader_cells(nb) -> bool:
    return any("nbgrader" in c.get("metadata", {}) for c in nb.cells)


def check_source(path: Path, nb) -> None:
    """Authoring mistakes nbgrader reports only vaguely ("the nbgrader metadata may be corrupted")."""
    seen = {}
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        if not meta:
            continue
        grade_id = meta.get("grade_id")
        if not grade_id:
            raise UsageError(f"{path}: cell {index + 1} has nbgrader metadata but no grade_id")
        if grade_id in seen:
            raise UsageError(f"{path}: cells {seen[grade_id] + 1} and {index + 1} share the grade_id {grade_id!r}")
        seen[grade_id] = index
        if meta.get("grade") and "points" not in meta:
            raise UsageError(f"{path}: graded cell {grade_id!r} has no points")


def find_notebooks(paths, source: Path) -> list[Path]:
    """The notebooks named (each must exist), or every ``NN_*.ipynb`` in ``source``."""
    if paths:
        found = []
        for p in map(Path, paths):
            if not p.is_file():
                raise UsageError(f"{p}: no such notebook")
            if p.suffix != ".ipynb":
                raise UsageError(f"{p}: not a notebook (expected a .ipynb file)")
            found.append(p)
        return found
    found = sorted(Path(source).glob(NOTEBOOK_GLOB))
    if not found:
        raise UsageError(f"no notebooks (NN_name.ipynb) in {source}")
    return found


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(path: Path, data: bytes) -> None:
    """Replace ``path`` in one step, so an interrupted release leaves the old file or the new one."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_bytes(data)
    os.replace(partial, path)


def _backup(path: Path, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    stamp = f"{datetime.datetime.now():%Y%m%d-%H%M%S}"
    backup, n = folder / f"{path.stem}-{stamp}{path.suffix}", 1
    while backup.exists():
        n += 1
        backup = folder / f"{path.stem}-{stamp}-{n}{path.suffix}"
    shutil.copy2(path, backup)
    return backup


# --------------------------------------------------------------------------------- release


@dataclass
class Released:
    name: str
    status: str  # "written", "refreshed", "up to date", "kept", "overwritten"
    message: str


def release(notebooks, out: Path, *, force: bool = False, source: Path = DEFAULT_SOURCE, echo=print) -> list[Released]:
    """Write the student version of each notebook into ``out``; never overwrite a learner's changes.

    A file is replaced only if it is byte-identical to what was released there before (the
    manifest ``out/.attncourse-release.json`` remembers that), or with ``force`` (the old file is
    then saved under ``out/.attncourse-backup/``).
    """
    notebooks = find_notebooks(notebooks, source)
    for nb_path in notebooks:
        check_source(nb_path, _read(nb_path))
    names = [p.name for p in notebooks]
    if len(set(names)) != len(names):
        raise UsageError(f"two notebooks share a file name: {sorted(n for n in names if names.count(n) > 1)}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder")
    if any(out.resolve() == p.resolve().parent for p in notebooks):
        raise UsageError(f"{out}: that is where the instructor notebooks are; write the student copies elsewhere")

    from tqdm.auto import tqdm

    with tempfile.TemporaryDirectory(prefix="attncourse-release-") as tmp:
        course = Course(Path(tmp) / "course")
        student = {}
        for nb_path in tqdm(notebooks, desc="releasing", unit="notebook", file=sys.stderr,
                            disable=len(notebooks) < 2, leave=False):
            course.add_source(nb_path)
            student[nb_path.name] = course.generate(nb_path).read_bytes()

    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    except (OSError, ValueError):
        manifest = {}
    results = []
    for name, data in student.items():
        target, new = out / name, _sha256(data)
        if not target.exists():
            _write(target, data)
            results.append(Released(name, "written", f"wrote      {target}"))
        else:
            current = _sha256(target.read_bytes())
            if current == new:
                results.append(Released(name, "up to date", f"up to date {target}"))
            elif manifest.get(name) == current:
                _write(target, data)
                results.append(Released(name, "refreshed", f"refreshed  {target} (unchanged since it was released)"))
            elif force:
                backup = _backup(target, out / BACKUPS)
                _write(target, data)
                results.append(Released(name, "overwritten", f"overwrote  {target} (--force; the old file is saved as {backup})"))
            else:
                results.append(Released(name, "kept", f"kept       {target}: it changed since it was released, so it "
                                                      f"is left as it is (--force overwrites it, keeping a backup)"))
                continue
        manifest[name] = new
    _write(manifest_path, (json.dumps(dict(sorted(manifest.items())), indent=1) + "\n").encode())
    for r in results:
        echo(r.message)
    return results


# ----------------------------------------------------------------------------------- grade


@dataclass
class Exercise:
    grade_id: str
    points: float
    max_points: float
    note: str = ""


@dataclass
class Graded:
    submission: str
    notebook: str
    exercises: list[Exercise] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def points(self) -> float:
        return sum(e.points for e in self.exercises)

    @property
    def max_points(self) -> float:
        return sum(e.max_points for e in self.exercises)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(points=self.points, max_points=self.max_points, seconds=round(self.seconds, 1))
        return d


def _first_line(text: str, limit: int = 300) -> str:
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failure_notes(nb, timeout) -> dict[str, str]:
    """grade_id -> why its test failed, from the errors of the autograded notebook."""
    notes, errors = {}, []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell_errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        errors += cell_errors
        if integrity.is_test_cell(cell):
            if any(e.get("ename") == "CellTimeoutError" for e in errors):
                notes[cell.metadata.nbgrader["grade_id"]] = f"a cell ran longer than the {timeout} s limit (stopped)"
            elif cell_errors:
                e = cell_errors[0]
                notes[cell.metadata.nbgrader["grade_id"]] = _first_line(f"{e.get('ename')}: {e.get('evalue')}")
            errors = []
    return notes


def _instructor_for(submission: Path, source: Path) -> Path:
    instructor = Path(source) / submission.name
    if not instructor.is_file():
        known = ", ".join(p.name for p in sorted(Path(source).glob(NOTEBOOK_GLOB))) or "none"
        raise UsageError(
            f"{submission}: no instructor notebook named {submission.name} in {source} "
            f"(submissions are matched by file name; known: {known})"
        )
    return instructor


def grade(submissions, *, source: Path = DEFAULT_SOURCE, timeout: int = DEFAULT_TIMEOUT,
          notebook_timeout: int | None = None, course_dir: Path | None = None, progress: bool | None = None,
          echo=print) -> list[Graded]:
    """Grade each submission against the instructor notebook of the same file name.

    timeout: seconds per cell; notebook_timeout: seconds for a whole notebook, after which the
    remaining cells get 1 s each (default ``max(600, 10 * timeout)``).
    """
    if not submissions:
        raise UsageError("no submissions given")
    if timeout is not None and timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout}")
    if notebook_timeout is not None and notebook_timeout <= 0:
        raise UsageError(f"--notebook-timeout must be a positive number of seconds, got {notebook_timeout}")
    paths = [Path(s) for s in submissions]
    instructors = {}
    for p in paths:  # check every input before grading anything
        if not p.is_file():
            raise UsageError(f"{p}: no such submission")
        if p.suffix != ".ipynb":
            raise UsageError(f"{p}: not a notebook (expected a .ipynb file)")
        instructor = _instructor_for(p, source)
        if instructor.name not in instructors:
            nb = _read(instructor)
            check_source(instructor, nb)
            if not _graded_cells(nb):
                raise UsageError(f"{instructor}: has no graded cells (nbgrader metadata grade: true), nothing to grade")
            instructors[instructor.name] = (instructor, nb)

    with contextlib.ExitStack() as stack:
        if course_dir is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="attncourse-grade-")))
        else:
            root = Path(course_dir)
            if root.exists() and any(root.iterdir()):
                raise UsageError(f"{root}: --course-dir must be a new or empty folder")
        course = Course(root, timeout=timeout, notebook_timeout=notebook_timeout)
        releases = {}
        for name, (instructor, nb) in instructors.items():
            course.add_source(instructor, kernelspec=True)
            releases[name] = _read(course.generate(instructor))

        show = progress if progress is not None else len(paths) > 1
        bar = None
        if show:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(paths), desc="grading", unit="notebook", file=sys.stderr)
            echo = bar.write
        results = []
        for index, path in enumerate(paths, 1):
            instructor, instructor_nb = instructors[path.name]
            result = _grade_one(course, f"s{index:03d}", path, instructor_nb, releases[path.name], timeout)
            results.append(result)
            echo(format_result(result))
            if bar is not None:
                bar.update()
        if bar is not None:
            bar.close()
    return results


def _grade_one(course: Course, student: str, path: Path, instructor_nb, release_nb, timeout) -> Graded:
    started = time.monotonic()
    result = Graded(submission=str(path), notebook=path.name)
    graded_ids = [c.metadata.nbgrader["grade_id"] for c in _graded_cells(instructor_nb)]
    max_points = {c.metadata.nbgrader["grade_id"]: float(c.metadata.nbgrader.get("points", 0))
                  for c in _graded_cells(instructor_nb)}
    forced: dict[str, str] = {}
    try:
        nb = nbformat.read(path, as_version=4)
        if not isinstance(nb.get("cells"), list):
            raise ValueError("it has no cells")
    except Exception as e:
        result.notes.append(_first_line(f"not a readable notebook ({type(e).__name__}: {e})"))
        result.exercises = [Exercise(g, 0.0, max_points[g], "the submission could not be read") for g in graded_ids]
        result.seconds = time.monotonic() - started
        return result

    forced.update(integrity.changed_test_cells(nb, release_nb, instructor_nb))
    for finding in integrity.find_tampering(nb, release_nb, instructor_nb):
        cell = nb.cells[finding.cell]
        cell.source = integrity.neutralised_source(finding.problems)
        cell.outputs, cell.execution_count = [], None
        reason = _first_line("an answer cell could change the checks, so it was not run: "
                             + "; ".join(finding.problems), 600)
        if finding.grade_id is not None:
            forced.setdefault(finding.grade_id, reason)
        result.notes.append(f"cell {finding.cell + 1}: {reason}")

    course.submit(path.name, student, nb)
    outcome = course.autograde(path.name, student)
    notes: dict[str, str] = {}
    grades: dict[str, tuple[float, float, bool]] = {}
    if outcome.get("success"):
        grades = course.grades(path.name, student)
        with contextlib.suppress(Exception):
            notes = _failure_notes(nbformat.read(course.autograded(path.name, student), as_version=4), timeout)
    else:
        result.notes.append(_first_line("nbgrader could not grade it: " + _nbgrader_error(outcome), 600))

    for grade_id in graded_ids:
        score, maximum, manual = grades.get(grade_id, (0.0, max_points[grade_id], False))
        if grade_id in forced:
            result.exercises.append(Exercise(grade_id, 0.0, maximum, forced[grade_id]))
        elif not grades:
            result.exercises.append(Exercise(grade_id, 0.0, maximum, "not graded"))
        else:
            note = notes.get(grade_id, "")
            if manual:
                note = "needs manual grading" + (f"; {note}" if note else "")
            elif score < maximum and not note:
                note = "the test did not pass"
            result.exercises.append(Exercise(grade_id, score, maximum, note))
    result.seconds = time.monotonic() - started
    return result


def _number(x: float) -> str:
    return f"{x:g}"


def format_result(result: Graded) -> str:
    width = max([len(e.grade_id) for e in result.exercises] + [5])
    lines = [f"{result.submission}: {_number(result.points)} / {_number(result.max_points)} points "
             f"({result.seconds:.1f} s)"]
    for e in result.exercises:
        note = f"   {e.note}" if e.note else ""
        lines.append(f"  {e.grade_id:<{width}}  {_number(e.points):>4} / {_number(e.max_points):<4}{note}")
    lines.append(f"  {'total':<{width}}  {_number(result.points):>4} / {_number(result.max_points)}")
    lines += [f"  note: {n}" for n in result.notes]
    return "\n".join(lines)


def write_json(results: list[Graded], path: Path, timeout) -> None:
    data = {"timeout": timeout, "submissions": [r.as_dict() for r in results]}
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
