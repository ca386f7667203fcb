"""Mark one submission: read its answers, refuse what breaks the rule for answers, run the answers
in a sandbox on inputs the grader chooses, and judge what comes back in the grader's own process.

The verdict never depends on anything the submitted code can reach: the hidden tests do not exist
inside the sandbox, only the inputs of one check at a time go in and only the function's answers
come out (as arrays, ``attncourse.classroom.protocol``), and ``Exercise.verdict`` compares them
with the reference here. Per exercise:

1. its structure (``attncourse.classroom.submission``): a broken one scores 0 with the reason;
2. its answer's source, read without running it (``attncourse.exercises.scan``), with the words
   the visible check uses: an answer that breaks the rule for answers scores 0;
3. its answer cells run, then every case of every check the instructor's test cell names: the
   visible check's own seed first, then the hidden tests, whose inputs are drawn from fresh
   randomness at every grading run (``hidden_seeds``), so no table of answers can be prepared.
   The grader accepts exactly one well-formed answer per case it sent (an error ends the cases
   of that check): anything missing, extra or malformed scores 0. The first wrong answer ends
   the exercise. On a hidden case the note is one sentence of the grader's own: nothing derived
   from the hidden inputs or written by the learner (an error's name, a message, which case)
   reaches a report.

Every note is said in the submission's language (``attncourse.i18n.speaking``: a Chinese
edition's notebook gets its check messages and notes in Chinese, an English one in English,
whatever language the grader runs in); so are the refusals the sandbox's process makes.

A cell or call that does not answer within ``timeout`` seconds, or a process that dies, costs only
the exercise it happened in: the sandbox is killed and a fresh one replays the earlier answers
(without the cell that hung) for the exercises after it. The whole notebook has ``budget``
seconds, on one clock that runs through every request, replays included: when it runs out the
sandbox is killed wherever it is, and the exercises not judged score 0 with that reason.
"""

from __future__ import annotations

import ast
import time
from dataclasses import asdict, dataclass, field

from ..exercises import scan
from ..exercises.engine import (
    CALLED_BUILTIN,
    WHERE,
    error_hint,
    from_scratch_message,
    in_helper,
    label_text,
)
from ..i18n import say, speaking
from . import protocol
from .assignment import Assignment, Check
from .output import clean
from .sandbox import Died, Limits, Session, Timeout
from .submission import read_submission

__all__ = ["Graded", "Mark", "clean", "mark", "static_problem"]


@dataclass
class Mark:
    grade_id: str
    points: float
    max_points: float
    note: str = ""  # why points were lost: the grader's words, never a hidden input
    title: str = ""  # "Exercise 1 · …" as the chapter heads it, in the submission's language


@dataclass
class Graded:
    submission: str
    notebook: str
    student: str  # exactly as the submission's folder names it (cleaned only for display)
    exercises: list[Mark] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    assignment: str = ""  # nbgrader's assignment folder, else the notebook's name
    timestamp: str = ""  # nbgrader's timestamp.txt beside it, when there is one
    language: str = "en"  # the submission's, which its notes and report speak

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

    @classmethod
    def from_dict(cls, data: dict) -> Graded:
        """The result ``as_dict`` wrote (its derived totals are recomputed, not read)."""
        data = {k: v for k, v in data.items() if k not in ("points", "max_points")}
        exercises = [Mark(**e) for e in data.pop("exercises")]
        return cls(exercises=exercises, **data)


# the grader's notes, in the submission's language (``attncourse.i18n.say``; ``{...}``: filled in)
HIDDEN = (
    "{name} passed the visible check but not the hidden tests of {check}, which try the same "
    "kinds of input with other numbers"
)
MALFORMED = "{name}: the answers to its cases were malformed ({error})"
NOT_A_RESULT = "an answer that is not a result"
NO_VALUE = "a result without its value"
NO_DESCRIPTION = "an error without its description"
NO_RESULTS = "no results"
NOT_ONE_EACH = "not one answer per case"
NOT_DEFINED = "{name} is not defined"
NOT_DEFINED_RAISED = "{name} is not defined (its cell raised {error})"
NOT_IMPLEMENTED = "{name} is not implemented yet"
RAISED = "{name} raised {error} ({where})"
RAISED_HINT = "{name} raised {error} ({where}); hint: {hint}"
IN_PLACE = (
    "{name} changed its input in place ({where}), e.g. `x -= ...` or `x.exp_()`: compute a new "
    "tensor instead"
)
WRONG = "{name}: {problem} ({where})"
OUT_OF_MEMORY = (
    "the submission's processes used more than their {memory} MB of memory together while this "
    "exercise ran"
)
PROCESS_ENDED = "the submission's process ended while this exercise ran ({error})"
UNREADABLE = "the submission could not be read"
NOT_PYTHON = (
    "the answer cell of {name} is not Python ({error}): run it in the notebook to see where"
)
TIME_UP = "not graded: the notebook's {seconds} s were used up"
STOPPED = "stopped after {seconds} s without an answer (an endless loop?)"
SENTENCES = (
    HIDDEN,
    MALFORMED,
    NOT_A_RESULT,
    NO_VALUE,
    NO_DESCRIPTION,
    NO_RESULTS,
    NOT_ONE_EACH,
    NOT_DEFINED,
    NOT_DEFINED_RAISED,
    NOT_IMPLEMENTED,
    RAISED,
    RAISED_HINT,
    IN_PLACE,
    WRONG,
    OUT_OF_MEMORY,
    PROCESS_ENDED,
    UNREADABLE,
    NOT_PYTHON,
    TIME_UP,
    STOPPED,
)


def _defined_functions(source: str) -> set[str]:
    try:
        tree = scan.python_of(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _called_names(source: str) -> set[str]:
    try:
        return {n.id for n in ast.walk(scan.python_of(source)) if isinstance(n, ast.Name)}
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()


def static_problem(
    sources: list[str], earlier: dict[str, str], concepts, imports, notebook=()
) -> str | None:
    """The first problem of an exercise's answer against the rule for answers: its own cells,
    and the earlier answer cells whose functions it uses (``earlier``: function name -> source),
    said as found in the function it calls; ``notebook``: what the notebook's own cells define."""
    todo, read = [(source, None) for source in sources], set()
    while todo:
        source, helper = todo.pop(0)
        if source in read:
            continue
        read.add(source)
        problems = scan.scan(source, concepts, imports=imports, notebook=notebook)
        if problems:
            return in_helper(problems[0], helper)
        called = sorted(name for name in _called_names(source) if name in earlier)
        todo += [(earlier[name], helper or name) for name in called]
    return None


def unreadable_answer(sources: list[str]) -> str | None:
    """What makes an answer's own cells not Python (a syntax error), or None (a cell too deep to
    read is the reading's problem)."""
    for source in sources:
        try:
            scan.python_of(source)
        except (RecursionError, MemoryError):
            return None
        except (SyntaxError, ValueError) as error:
            return clean(f"{type(error).__name__}: {error}"[:200])
    return None


class BudgetSpent(Exception):
    """The notebook's time is up (the sandbox is killed)."""


class _Runner:
    """A sandbox session that comes back after a hang or a crash, with the answers run so far;
    every request, the replay's included, ends by the notebook's ``deadline``."""

    def __init__(self, setup: str, options: dict, timeout: float, deadline: float):
        self.setup, self.options, self.timeout, self.deadline = setup, options, timeout, deadline
        self.session, self.cells = None, []  # cells that ran (or raised) without hanging
        self.died_of_memory = False

    def _request(self, header: dict, arrays=None, timeout: float | None = None):
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.close()
            raise BudgetSpent()
        wanted = self.timeout if timeout is None else timeout
        try:
            return self.session.request(header, arrays, timeout=min(wanted, left))
        except Timeout:
            if wanted > left:  # the notebook's clock ran out, not the call's
                raise BudgetSpent() from None
            raise
        except Died:
            self.died_of_memory = self.session.out_of_memory()
            raise

    def _start(self) -> None:
        self.session = Session(**self.options)
        self._request({"op": "run", "source": self.setup}, timeout=max(self.timeout, 120))
        for source in self.cells:
            self._request({"op": "run", "source": source})

    def request(self, header: dict, arrays=None):
        if self.session is None or not self.session.alive:
            self._start()
        return self._request(header, arrays)

    def run_cell(self, source: str) -> str | None:
        """Run an answer cell: None, or the error it raised (its text)."""
        answer, _ = self.request({"op": "run", "source": source})
        self.cells.append(source)
        return None if answer.get("ok") is True else clean(answer.get("error", "an error"))

    def close(self) -> None:
        if self.session is not None:
            self.session.close()


class Malformed(Exception):
    """The answers are not one well-formed answer per case sent."""


def _answer_of(entry, out) -> tuple[dict, object]:
    """One case's answer, checked for its kind: (the answer, its value or None)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("ok"), bool):
        raise Malformed(say(NOT_A_RESULT))
    if entry["ok"]:
        if "value" not in entry or not isinstance(entry.get("mutated", False), bool):
            raise Malformed(say(NO_VALUE))
        return entry, protocol.decode(entry["value"], out)
    if not isinstance(entry.get("error"), str) or not all(
        isinstance(entry.get(flag, False), bool) for flag in ("refused", "not_implemented")
    ):
        raise Malformed(say(NO_DESCRIPTION))
    return entry, None


def _answers(runner: _Runner, check: Check, cases, concepts) -> tuple[dict, list]:
    """Call the learner's function on every case (in one request, stopping at the first error):
    (the request's answer, [(answer, value)] one per case answered), or ``Malformed``."""
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
    if answer.get("ok") is not True:  # the function is not there at all
        if answer.get("missing") is True:
            return answer, []
        raise Malformed(say(NO_RESULTS))
    results = answer.get("results")
    if not isinstance(results, list) or not 1 <= len(results) <= len(cases):
        raise Malformed(say(NOT_ONE_EACH))
    try:
        judged = [_answer_of(entry, out) for entry in results]
    except (protocol.ProtocolError, KeyError, TypeError, ValueError, AttributeError) as error:
        raise Malformed(str(error)) from None
    # every case answered, or the answers up to the first error (which ends the check)
    if any(not a["ok"] for a, _ in judged[:-1]) or (
        len(judged) < len(cases) and judged[-1][0]["ok"]
    ):
        raise Malformed(say(NOT_ONE_EACH))
    return answer, judged


def hidden_note(name: str, check: Check) -> str:
    """The note for any failure on a hidden case: the grader's words only."""
    return say(HIDDEN, name=name, check=check.name.rsplit(".", 1)[-1])


def _judge_exercise(runner: _Runner, exercise, cell_errors: list[str], seeds: dict) -> str | None:
    """Run every case of every check of the exercise: None if all pass, else the note."""
    concepts = list(exercise.concepts)
    for check in sorted(exercise.checks, key=lambda c: c.hidden):
        declaration = check.declaration
        seed = seeds.get((exercise.grade_id, check), check.seed) if check.hidden else check.seed
        cases = declaration.inputs(seed)
        name = check.function
        try:
            answer, judged = _answers(runner, check, cases, concepts)
        except Malformed as error:
            runner.close()  # a malformed answer is the submission's, not the grader's
            if check.hidden:
                return hidden_note(name, check)
            return clean(say(MALFORMED, name=name, error=error))
        except (Timeout, Died):
            if check.hidden:  # when, and how, it failed on hidden inputs is not said either
                return hidden_note(name, check)
            raise
        if answer.get("missing"):
            if cell_errors:
                return say(NOT_DEFINED_RAISED, name=name, error=cell_errors[0])
            return say(NOT_DEFINED, name=name)
        for number, (case, (result, got)) in enumerate(zip(cases, judged), 1):
            where = say(WHERE, number=number, total=len(cases), label=label_text(case.label))
            failed = not result["ok"] or result.get("mutated")
            verdict = None if failed else declaration.verdict(case, got)
            if (failed or verdict is not None) and check.hidden:
                return hidden_note(name, check)
            if not result["ok"]:
                if result.get("not_implemented"):
                    return say(NOT_IMPLEMENTED, name=name)
                error = clean(result["error"])
                if result.get("refused"):
                    return say(CALLED_BUILTIN, name=name, error=error)
                hint = say(case.on_error) if case.on_error else error_hint(error)
                if hint:
                    return say(RAISED_HINT, name=name, error=error, where=where, hint=hint)
                return say(RAISED, name=name, error=error, where=where)
            if result.get("mutated"):
                return say(IN_PLACE, name=name, where=where)
            if verdict is not None:
                return clean(say(WRONG, name=name, problem=verdict[1], where=where))
    return None


def _died(error: Died, of_memory: bool, limits: Limits) -> str:
    if of_memory:
        return say(OUT_OF_MEMORY, memory=limits.memory_mb)
    return clean(say(PROCESS_ENDED, error=error))


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
    hidden_seeds: dict | None = None,
    hidden_paths=(),
    assignment_name: str = "",
) -> Graded:
    """Grade one submitted notebook against ``assignment`` (see the module docstring).
    ``hidden_seeds``: {(exercise grade id, hidden check): seed} drawn by the grader for this run
    (without it, the notebook's own hidden seeds); ``hidden_paths``: what the sandbox must not
    see (``attncourse.classroom.sandbox.Session``)."""
    started = time.monotonic()
    budget = budget if budget is not None else max(600.0, 10 * timeout)
    result = Graded(str(path), assignment.path.name, student, assignment=assignment_name)
    submission = read_submission(path, release_cells, assignment)
    result.language = submission.language
    with speaking(submission.language):
        if submission.unreadable:
            result.notes.append(clean(submission.unreadable))
            result.exercises = [
                Mark(e.grade_id, 0.0, e.points, say(UNREADABLE)) for e in assignment.exercises
            ]
        else:
            options = {"sandbox": sandbox, "slot": slot, "limits": limits, "hidden": hidden_paths}
            options["lang"] = submission.language  # the sandbox's refusals speak it too
            runner = _Runner(assignment.setup, options, timeout, started + budget)
            try:
                _mark_exercises(result, submission, assignment, runner, hidden_seeds or {}, budget)
            finally:
                runner.close()
    titles = assignment.titles(submission.language)
    for exercise in result.exercises:
        exercise.title = titles.get(exercise.grade_id, "")
    result.seconds = time.monotonic() - started
    return result


def _mark_exercises(result: Graded, submission, assignment: Assignment, runner, seeds, budget):
    """Mark every exercise of a readable submission in turn (see the module docstring);
    ``budget``: the notebook's seconds, which end at ``runner.deadline``."""
    earlier: dict[str, str] = {}  # function name -> the answer cell that defines it
    spent = False
    for exercise in assignment.exercises:
        points, note = 0.0, submission.problems.get(exercise.grade_id)
        sources = [submission.answers[a] for a in exercise.answers if a in submission.answers]
        if note is None and (error := unreadable_answer(sources)):
            note = say(NOT_PYTHON, name=exercise.functions[0], error=error)
        if note is None:
            problem = static_problem(
                sources, earlier, exercise.concepts, assignment.imports, assignment.notebook
            )
            if problem is not None:
                note = from_scratch_message(exercise.functions[0], problem)
        cell_errors = []
        if spent or time.monotonic() > runner.deadline:
            spent, note = True, note or say(TIME_UP, seconds=f"{budget:g}")
        else:
            try:
                for source in sources:
                    error = runner.run_cell(source)
                    if error:
                        cell_errors.append(error)
                if note is None:
                    note = _judge_exercise(runner, exercise, cell_errors, seeds)
                    points = exercise.points if note is None else 0.0
            except BudgetSpent:
                runner.close()
                spent, points = True, 0.0
                note = note or say(TIME_UP, seconds=f"{budget:g}")
            except Timeout:  # the reading's refusal, if there is one, is the reason
                note = note or say(STOPPED, seconds=f"{runner.timeout:g}")
            except Died as error:
                note = note or _died(error, runner.died_of_memory, runner.options["limits"])
        for source in sources:
            earlier.update(dict.fromkeys(_defined_functions(source), source))
        result.exercises.append(Mark(exercise.grade_id, points, exercise.points, note or ""))
