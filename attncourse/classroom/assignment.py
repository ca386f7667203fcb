"""What an instructor notebook asks and how it is checked, read from the notebook itself.

Each graded exercise is the run of answer (solution) cells before a graded test cell. The test
cell names its checks: calls such as ``check_softmax(my_softmax)`` and, among the hidden tests,
``ex.check_softmax(my_softmax, seed=11)``, where ``check_softmax`` is an
``attncourse.exercises.engine.Exercise`` of an ``attncourse.exercises.chNN`` module. ``read``
turns a notebook into ``Exercise``s of this module's kind: the grade id and points, the answer
cells' ids, and every (check, function, seed) to run; plus ``setup``, the notebook's import lines
that answers may rely on (``torch``, ``math``, ``F``, ...: those of the modules an answer may
use, ``attncourse.exercises.scan.IMPORTABLE``), and ``imports``, what every import line of the
notebook binds, so that the grader reads a name as the learner's kernel knows it (``plt`` is
matplotlib's, and refused as such, with the visible check's words).

The instructor notebook is trusted: only its cells decide what is checked, never a submission's.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass, field
from pathlib import Path

from ..exercises.engine import Exercise as Declaration
from ..exercises.scan import IMPORTABLE, imports_of, notebook_names, parse, python_of
from ..i18n import translations
from .notebooks import UsageError, read_notebook

# what an answer may rely on from the notebook's imports: the modules an answer may use (not the
# course's own package, nor plotting and widgets, which only cost time)
SETUP_MODULES = frozenset(IMPORTABLE)


@dataclass(frozen=True)
class Check:
    """One call of a declared check in a test cell: ``check(function, seed=seed)``."""

    name: str  # "attncourse.exercises.ch01.check_softmax"
    function: str  # "my_softmax"
    seed: int
    hidden: bool

    @property
    def declaration(self) -> Declaration:
        module, attribute = self.name.rsplit(".", 1)
        return getattr(importlib.import_module(module), attribute)


@dataclass
class Exercise:
    grade_id: str  # the graded test cell's id
    points: float
    answers: list[str] = field(default_factory=list)  # grade ids of its solution cells
    checks: list[Check] = field(default_factory=list)
    named_in: str = ""  # the markdown cell whose last heading names it ("### Exercise 1 · ...")

    @property
    def concepts(self) -> tuple[str, ...]:
        found = []
        for check in self.checks:
            found += [c for c in check.declaration.reimplements if c not in found]
        return tuple(found)

    @property
    def functions(self) -> list[str]:
        return list(dict.fromkeys(check.function for check in self.checks))


@dataclass
class Assignment:
    path: Path
    exercises: list[Exercise]
    setup: str  # import lines, run before any answer
    imports: dict[str, str]  # what the setup binds, for reading answers
    notebook: frozenset[str] = frozenset()  # what its own cells define, which answers may not use

    def titles(self, lang: str = "en") -> dict[str, str]:
        """{grade id: the exercise's title} in ``lang``, where the notebook's catalogue
        (``attncourse.i18n``) translates the cell that names it; else in English."""
        current = translations(self.path, lang) if lang != "en" else {}
        return {e.grade_id: heading(current.get(e.named_in, e.named_in)) for e in self.exercises}


def nbgrader_meta(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def _calls(source: str, path: Path, grade_id: str) -> list[Check]:
    """The declared checks a test cell calls, hidden ones marked."""
    hidden_from = source.find("### BEGIN HIDDEN TESTS")
    line_of_hidden = source[:hidden_from].count("\n") + 1 if hidden_from >= 0 else None
    imports = imports_of(source)
    checks = []
    for node in ast.walk(parse(source)):
        if not isinstance(node, ast.Call):
            continue
        parts, func = [], node.func
        while isinstance(func, ast.Attribute):
            parts.insert(0, func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or func.id not in imports:
            continue
        name = ".".join([imports[func.id], *parts])
        if not name.startswith("attncourse.exercises.ch") or not name.rsplit(".", 1)[1].startswith(
            "check_"
        ):
            continue
        if not node.args or not isinstance(node.args[0], ast.Name):
            raise UsageError(f"{path}: {grade_id}: a check must be called on a function by name")
        seed = 0
        for keyword in node.keywords:
            if keyword.arg == "seed" and isinstance(keyword.value, ast.Constant):
                seed = int(keyword.value.value)
        check = Check(
            name, node.args[0].id, seed, bool(line_of_hidden and node.lineno > line_of_hidden)
        )
        if not isinstance(check.declaration, Declaration):
            raise UsageError(
                f"{path}: {grade_id} calls {name}, which is not declared as an Exercise "
                "(attncourse.exercises.engine): the grader cannot judge it outside the kernel"
            )
        if check not in checks:
            checks.append(check)
    return checks


def _imports(cells) -> tuple[str, str]:
    """(the import lines of the notebook's ordinary code cells for the modules answers may use,
    every import line of them): what the sandbox runs first, and what names mean."""
    setup, every = [], []
    for cell in cells:
        if cell.get("cell_type") != "code" or nbgrader_meta(cell):
            continue
        try:
            tree = python_of(cell.get("source", ""))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0):
                module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                line = ast.unparse(node)
                if line not in every:
                    every.append(line)
                if (module or "").split(".")[0] in SETUP_MODULES and line not in setup:
                    setup.append(line)
    return "\n".join(setup), "\n".join(every)


def heading(markdown: str) -> str:
    """The last heading of a markdown cell, without its #s ("Exercise 1 · The Pre-LN block")."""
    headings = [line.lstrip("#").strip() for line in markdown.splitlines() if line.startswith("#")]
    return headings[-1] if headings else ""


def read(path: Path) -> Assignment:
    """The exercises of an instructor notebook (see the module docstring)."""
    nb = read_notebook(path)
    exercises, answers = [], []
    named_in = last_heading = ""
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "markdown" and heading(cell.source):
            last_heading = cell.source
        if meta.get("solution") and not meta.get("grade"):
            named_in = named_in if answers else last_heading
            answers.append(meta["grade_id"])
        elif meta.get("grade"):
            if meta.get("solution"):
                raise UsageError(
                    f"{path}: {meta['grade_id']}: answer-and-test cells are not graded"
                )
            checks = _calls(cell.source, path, meta["grade_id"])
            if not checks:
                raise UsageError(f"{path}: test cell {meta['grade_id']} calls no declared check")
            points = float(meta.get("points", 0))
            exercises.append(Exercise(meta["grade_id"], points, answers, checks, named_in))
            answers, named_in = [], ""
    setup, every = _imports(nb.cells)
    return Assignment(Path(path), exercises, setup, imports_of(every), notebook_names(nb.cells))
