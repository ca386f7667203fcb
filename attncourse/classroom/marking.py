"""Mark one submission: read its answers, refuse what is not from scratch, run the answers in a
sandbox on inputs the grader chooses, and judge what comes back in the grader's own process.

The verdict never depends on anything the submitted code can reach: the hidden tests do not exist
inside the sandbox, only the inputs of one call at a time go in and only the function's answer
comes out (as arrays, ``attncourse.classroom.protocol``), and ``Exercise.verdict`` compares it
with the reference here. Per exercise:

1. its structure (``attncourse.classroom.submission``): a broken one scores 0 with the reason;
2. its answer's source, read without running it (``attncourse.exercises.scan``): an answer that
   calls what the exercise re-implements, the course's package, or hides what it calls scores 0;
3. its answer cells run, then every case of every check the instructor's test cell names (the
   visible seed first, then the hidden seeds); the first wrong answer ends the exercise.

A cell or call that does not answer within ``timeout`` seconds, or a process that dies, costs only
the exercise it happened in: the sandbox is killed and a fresh one replays the earlier answers
(without the cell that hung) for the exercises after it.
"""

from __future__ import annotations

import ast
import re
import time
from dataclasses import asdict, dataclass, field

from ..exercises import scan
from ..exercises.engine import error_hint
from . import protocol
from .assignment import Assignment, Check
from .sandbox import Died, Limits, Session, Timeout
from .submission import read_submission

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\x1b]")


def clean(text: str, limit: int = 600) -> str:
    """Printable, one paragraph, at most ``limit`` characters: safe to print and to put in HTML."""
    text = " ".join(_CONTROL.sub(" ", str(text)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Mark:
    grade_id: str
    points: float
    max_points: float
    note: str = ""  # why points were lost: the visible check's message, never a hidden input


@dataclass
class Graded:
    submission: str
    notebook: str
    student: str
    exercises: list[Mark] = field(default_factory=list)
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


def _defined_functions(source: str) -> set[str]:
    try:
        return {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()


def _called_names(source: str) -> set[str]:
    try:
        return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()


def static_problem(sources: list[str], earlier: dict[str, str], concepts, imports) -> str | None:
    """The first problem of an exercise's answer, read as a from-scratch answer: its own cells,
    and the earlier answer cells whose functions it uses (``earlier``: function name -> source)."""
    todo, read = list(sources), set()
    while todo:
        source = todo.pop(0)
        if source in read:
            continue
        read.add(source)
        problems = scan.scan(source, concepts, imports=imports)
        if problems:
            return f"not from scratch: {problems[0]}"
        todo += [earlier[name] for name in _called_names(source) if name in earlier]
    return None


class _Runner:
    """A sandbox session that comes back after a hang or a crash, with the answers run so far."""

    def __init__(self, setup: str, sandbox: bool, slot: int, limits: Limits, timeout: float):
        self.setup, self.sandbox, self.slot, self.limits, self.timeout = (
            setup,
            sandbox,
            slot,
            limits,
            timeout,
        )
        self.session, self.cells = None, []  # cells that ran (or raised) without hanging

    def _start(self) -> None:
        self.session = Session(sandbox=self.sandbox, slot=self.slot, limits=self.limits)
        self.session.request({"op": "run", "source": self.setup}, timeout=max(self.timeout, 120))
        for source in self.cells:
            self.session.request({"op": "run", "source": source}, timeout=self.timeout)

    def request(self, header: dict, arrays=None):
        if self.session is None or not self.session.alive:
            self._start()
        return self.session.request(header, arrays, timeout=self.timeout)

    def run_cell(self, source: str) -> str | None:
        """Run an answer cell: None, or the error it raised (its text)."""
        answer, _ = self.request({"op": "run", "source": source})
        self.cells.append(source)
        return None if answer.get("ok") else clean(answer.get("error", "an error"))

    def close(self) -> None:
        if self.session is not None:
            self.session.close()


def _answers(runner: _Runner, check: Check, cases, concepts) -> list[tuple[dict, object]]:
    """Call the learner's function on every case (in one request, stopping at the first error):
    [(answer, value)] in the order of the cases."""
    arrays: dict = {}
    calls = [
        {
            "args": protocol.encode(tuple(case.args), arrays, pickle=True),
            "kwargs": protocol.encode(list(case.kwargs.items()), arrays, pickle=True),
        }
        for case in cases
    ]
    header = {"op": "calls", "function": check.function, "calls": calls, "concepts": concepts}
    answer, out = runner.request(header, arrays)
    if not answer.get("ok"):  # the function is not there at all
        return [(answer, None)]
    try:
        results = answer["results"]
        if not isinstance(results, list) or not results or len(results) > len(cases):
            raise protocol.ProtocolError("not one answer per input")
        return [(r, protocol.decode(r.get("value"), out) if r.get("ok") else None) for r in results]
    except (protocol.ProtocolError, KeyError, TypeError, AttributeError) as error:
        runner.close()  # a malformed answer is the submission's, not the grader's
        raise Died(f"a malformed answer ({error})") from None


def _judge_exercise(runner: _Runner, exercise, cell_errors: list[str]) -> str | None:
    """Run every case of every check of the exercise: None if all pass, else the note."""
    concepts = list(exercise.concepts)
    for check in sorted(exercise.checks, key=lambda c: c.hidden):
        declaration = check.declaration
        cases = declaration.inputs(check.seed)
        name = check.function
        for number, (case, (answer, got)) in enumerate(
            zip(cases, _answers(runner, check, cases, concepts)), 1
        ):
            where = (
                "hidden tests" if check.hidden else f"case {number} of {len(cases)}: {case.label}"
            )
            if not answer.get("ok"):
                if answer.get("missing"):
                    extra = f" (its cell raised {cell_errors[0]})" if cell_errors else ""
                    return f"{name} is not defined{extra}"
                if answer.get("not_implemented"):
                    return f"{name} is not implemented yet"
                error = clean(answer.get("error", "an error"))
                if answer.get("refused"):
                    return f"{name} must be written from scratch, but {error}"
                hint = error_hint(error)
                if check.hidden:  # never the hidden inputs, nor the learner's own words on them
                    kind = error.split(":", 1)[0]
                    return f"{name} raised {kind} on the hidden tests" + (
                        f"; hint: {hint}" if hint else ""
                    )
                hint = case.on_error or hint
                return f"{name} raised {error} ({where})" + (f"; hint: {hint}" if hint else "")
            if answer.get("mutated"):
                return (
                    f"{name} changed its input in place ({where}), e.g. `x -= ...` or "
                    "`x.exp_()`: compute a new tensor instead"
                )
            verdict = declaration.verdict(case, got)
            if verdict is None:
                continue
            kind, message = verdict
            if not check.hidden:
                return clean(f"{name}: {message} ({where})")
            if kind == "diagnosis":
                return clean(f"{name} passed the visible check but not the hidden tests: {message}")
            return clean(
                f"{name} passed the visible check but not the hidden tests, which try the same "
                f"kinds of input with other numbers (it failed on: {case.label})"
            )
    return None


def mark(
    path,
    student: str,
    assignment: Assignment,
    release_cells: list,
    *,
    sandbox: bool,
    slot: int = 0,
    timeout: float = 60.0,
    budget: float | None = None,
    limits: Limits = Limits(),
) -> Graded:
    """Grade one submitted notebook against ``assignment`` (see the module docstring)."""
    started = time.monotonic()
    budget = budget if budget is not None else max(600.0, 10 * timeout)
    result = Graded(str(path), assignment.path.name, student)
    submission = read_submission(path, release_cells, assignment)
    if submission.unreadable:
        result.notes.append(clean(submission.unreadable))
        result.exercises = [
            Mark(e.grade_id, 0.0, e.points, "the submission could not be read")
            for e in assignment.exercises
        ]
        result.seconds = time.monotonic() - started
        return result

    runner = _Runner(assignment.setup, sandbox, slot, limits, timeout)
    earlier: dict[str, str] = {}  # function name -> the answer cell that defines it
    try:
        for exercise in assignment.exercises:
            points, note = 0.0, submission.problems.get(exercise.grade_id)
            sources = [submission.answers[a] for a in exercise.answers if a in submission.answers]
            if note is None:
                note = static_problem(sources, earlier, exercise.concepts, assignment.imports)
            cell_errors = []
            if time.monotonic() - started > budget:
                note = f"not graded: the notebook's {budget:g} s were used up"
            else:
                try:
                    for source in sources:
                        error = runner.run_cell(source)
                        if error:
                            cell_errors.append(error)
                    if note is None:
                        note = _judge_exercise(runner, exercise, cell_errors)
                        points = exercise.points if note is None else 0.0
                except Timeout:
                    note = f"stopped after {timeout:g} s without an answer (an endless loop?)"
                except Died as error:
                    note = clean(
                        f"the submission's process ended while this exercise ran ({error})"
                    )
            for source in sources:
                earlier.update(dict.fromkeys(_defined_functions(source), source))
            result.exercises.append(Mark(exercise.grade_id, points, exercise.points, note or ""))
    finally:
        runner.close()
    result.seconds = time.monotonic() - started
    return result
