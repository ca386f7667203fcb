"""What grading checks in a submission before running it: test cells kept as released, and
answer code that does not tamper with the checks.

nbgrader restores an edited locked cell from the gradebook and runs it, so on its own an edited
test cell would still earn points; and a submission runs in the same Python process as the tests
that grade it, so an answer cell could replace the checks (``exercises.check_softmax = lambda f:
None``, ``torch.allclose = ...``). Two defences, both applied by ``attncourse grade``:

* ``changed_test_cells``: every graded test cell of the release must be in the submission with the
  same source; a deleted or edited one earns 0 for its exercise.
* ``scan_code``: every code cell the learner wrote or changed is parsed (``ast``, after IPython's
  own translation of ``%magics``) and rejected if it could change code other than its own:
  assigning or deleting attributes of imported modules or of anything but ``self`` (except a
  tensor's ``.grad``/``.data``/``.requires_grad``), item assignment into a module
  (``sys.modules[...]``), ``setattr``/``delattr``/``exec``/``eval``/``compile``/``globals``/
  ``vars``/``open``/``__import__``, dunder or private attributes (``__dict__``, ``_C``),
  dynamic ``getattr``, defining ``__torch_function__``-style hooks, calling a method through its
  class (``A.f(torch)``), writing files (``np.savetxt``, ``torch.save``), imports outside a list
  of numerical modules (no ``os``, ``sys``, ``importlib``, ``builtins``, ``torch.library``), star
  imports, shell commands and most magics, and rebinding at top level a name the instructor's
  cells define and the tests use (``check_softmax = lambda f: None``, ``def check_softmax``,
  ``import numpy as torch``). Grading replaces such a cell by one that raises, so the exercise it
  belongs to earns 0, and the other exercises are graded as if the cell were not there.

Python in one process cannot be sandboxed completely; this closes the direct routes, and the check
helpers add their own layer (they bind ``torch.allclose`` and friends at import, refuse
``torch.Tensor`` subclasses, and compare with torch-function dispatch disabled).
"""

from __future__ import annotations

import ast
import contextlib
import re
from dataclasses import dataclass

ALLOWED_IMPORTS = frozenset(
    {
        "torch",
        "numpy",
        "math",
        "cmath",
        "random",
        "itertools",
        "functools",
        "collections",
        "typing",
        "dataclasses",
        "operator",
        "statistics",
        "fractions",
        "decimal",
        "string",
        "re",
        "heapq",
        "bisect",
        "copy",
        "time",
        "warnings",
        "enum",
        "abc",
        "numbers",
        "matplotlib",
        "tqdm",
        "attncourse",
    }
)
DENIED_MODULE_PARTS = frozenset(
    {"library", "ops", "cpp_extension", "overrides", "hub", "jit", "fx", "compiler", "ctypeslib"}
)
BANNED_NAMES = frozenset(
    {
        "setattr",
        "delattr",
        "exec",
        "eval",
        "compile",
        "__import__",
        "globals",
        "locals",
        "vars",
        "open",
        "breakpoint",
        "get_ipython",
        "exit",
        "quit",
        "input",
        "__builtins__",
        "__loader__",
        "__spec__",
    }
)
ALLOWED_DUNDERS = frozenset(
    {
        "__init__",
        "__name__",
        "__doc__",
        "__call__",
        "__len__",
        "__iter__",
        "__next__",
        "__getitem__",
        "__repr__",
        "__str__",
        "__enter__",
        "__exit__",
        "__post_init__",
    }
)
FILE_WRITERS = frozenset(
    {
        "save",
        "savez",
        "savez_compressed",
        "savetxt",
        "tofile",
        "dump",
        "savefig",
        "memmap",
        "from_file",
        "write_text",
        "write_bytes",
    }
)
DENIED_ATTRIBUTES = (
    DENIED_MODULE_PARTS
    | FILE_WRITERS
    | frozenset(
        {
            "compile",
            "load",
            "f_globals",
            "f_locals",
            "f_back",
            "f_builtins",
            "gi_frame",
            "cr_frame",
            "ag_frame",
            "tb_frame",
            "func_globals",
        }
    )
)
SAFE_ATTRIBUTE_STORES = frozenset({"grad", "data", "requires_grad"})
LINE_MAGICS_CHECKED = frozenset({"time", "timeit"})
LINE_MAGICS_HARMLESS = frozenset({"matplotlib"})
CELL_MAGICS_CHECKED = frozenset({"time", "timeit", "capture"})


def python_source(source: str) -> str:
    """A cell's source as plain Python (IPython's translation of %magics and !shell)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython comes with the kernel
        return source
    try:
        return TransformerManager().transform_cell(source)
    except Exception:
        return source


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node


def _text(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _import_target(module: str | None, name: str) -> str:
    return f"{module}.{name}" if module else name


class _Bindings(ast.NodeVisitor):
    """Top-level names a piece of code binds (with the import each stands for) and names it
    reads.
    """

    def __init__(self):
        self.bound: dict[str, str | None] = {}
        self.defined: set[str] = set()  # def and class names
        self.loaded: set[str] = set()
        self.loaded_unbound: set[str] = set()  # read at top level before this code binds them
        self.reads_of: dict[str, set[str]] = {}  # def/class name -> names its body reads
        self.depth = 0
        self._current: list[set[str]] = []

    def _bind(self, name, target=None):
        if self.depth == 0:
            self.bound[name] = target

    def visit_Import(self, node):
        for a in node.names:
            self._bind(
                a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0]
            )

    def visit_ImportFrom(self, node):
        for a in node.names:
            if a.name != "*":
                self._bind(a.asname or a.name, _import_target(node.module, a.name))

    def _scope(self, node, name=None):
        if name is not None:
            self._bind(name)
        for d in getattr(node, "decorator_list", []):
            self.visit(d)
        self.depth += 1
        reads = set()
        self._current.append(reads)
        for child in ast.iter_child_nodes(node):
            if child not in getattr(node, "decorator_list", []):
                self.visit(child)
        self._current.pop()
        self.depth -= 1
        if name is not None and self.depth == 0:
            self.reads_of[name] = reads
        elif self._current:
            self._current[-1].update(reads)
        else:
            self.loaded_unbound.update(r for r in reads if r not in self.bound)

    def visit_FunctionDef(self, node):
        if self.depth == 0:
            self.defined.add(node.name)
        self._scope(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        if self.depth == 0:
            self.defined.add(node.name)
        self._scope(node, node.name)

    def visit_Lambda(self, node):
        self._scope(node)

    def _comprehension(self, node):
        self._scope(node)  # its loop variables are its own

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.loaded.add(node.id)
            if self._current:
                self._current[-1].add(node.id)
            elif node.id not in self.bound:
                self.loaded_unbound.add(node.id)
        else:
            self._bind(node.id)


def bindings(source: str) -> _Bindings:
    b = _Bindings()
    with contextlib.suppress(SyntaxError):
        b.visit(ast.parse(python_source(source)))
    return b


class _Scanner(ast.NodeVisitor):
    def __init__(self, protected: dict[str, str | None], classes: frozenset = frozenset()):
        self.protected = protected
        self.classes = classes  # classes the learner's cells define
        self.problems: list[str] = []
        self.imported: set[str] = set()
        self.modules: set[str] = set()  # names bound by `import x` / `import x as y`
        self.depth = 0  # inside a def, lambda or class
        self.comprehension = 0
        self.selves: list[str | None] = []  # per enclosing function: its `self` if it is a method
        self.class_body = False

    def problem(self, node, message):
        line = getattr(node, "lineno", None)
        self.problems.append(f"line {line}: {message}" if line else message)

    # ------------------------------------------------------------------ names and bindings
    def _bind(self, node, name, import_target=None, walrus=False):
        if self.depth or (self.comprehension and not walrus):
            return
        if name in self.protected and not (
            import_target is not None and import_target == self.protected[name]
        ):
            self.problem(
                node, f"redefines `{name}`, which the notebook's own cells define and its tests use"
            )

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            if node.id in BANNED_NAMES:
                self.problem(node, f"uses `{node.id}`, which answer cells may not use")
        else:
            if self.selves and node.id == self.selves[-1]:
                self.problem(node, f"rebinds `{node.id}` inside a method")
            self._bind(node, node.id)

    def visit_Global(self, node):
        for name in node.names:
            if name in self.protected:
                self.problem(
                    node,
                    f"declares `global {name}`: answer cells may not rebind the notebook's names",
                )

    def visit_NamedExpr(self, node):
        self._bind(node, node.target.id, walrus=True)
        self.visit(node.value)

    # --------------------------------------------------------------------------- imports
    def _check_module(self, node, module: str):
        parts = module.split(".")
        if parts[0] not in ALLOWED_IMPORTS:
            self.problem(
                node,
                f"imports `{module}`, which answer cells may not import "
                f"(they may import torch, numpy, math and other numerical modules)",
            )
        elif any(p.startswith("_") or p in DENIED_MODULE_PARTS for p in parts[1:]):
            self.problem(node, f"imports `{module}`, which answer cells may not import")

    def visit_Import(self, node):
        for a in node.names:
            self._check_module(node, a.name)
            name = a.asname or a.name.split(".")[0]
            self.imported.add(name)
            self.modules.add(name)
            self._bind(node, name, a.name if a.asname else a.name.split(".")[0])

    def visit_ImportFrom(self, node):
        if node.level:
            self.problem(node, "uses a relative import")
            return
        self._check_module(node, node.module or "")
        for a in node.names:
            if a.name == "*":
                self.problem(node, f"uses `from {node.module} import *`: import the names you need")
                continue
            if a.name.startswith("_") or a.name in DENIED_MODULE_PARTS:
                self.problem(
                    node,
                    f"imports `{a.name}` from `{node.module}`, which answer cells may not import",
                )
            name = a.asname or a.name
            self.imported.add(name)
            self._bind(node, name, _import_target(node.module, a.name))

    # ------------------------------------------------------------------------ definitions
    def _scope(self, children, self_name=None, class_body=False):
        self.depth += 1
        self.selves.append(self_name)
        outer, self.class_body = self.class_body, class_body
        for child in children:
            self.visit(child)
        self.class_body = outer
        self.selves.pop()
        self.depth -= 1

    def visit_FunctionDef(self, node):
        if (
            node.name.startswith("__")
            and node.name.endswith("__")
            and node.name not in ALLOWED_DUNDERS
        ):
            self.problem(node, f"defines `{node.name}`, a hook answer cells may not define")
        self._bind(node, node.name)
        for child in (
            node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d]
        ):
            self.visit(child)
        positional = node.args.posonlyargs + node.args.args
        is_method = self.class_body and positional and len(node.args.defaults) < len(positional)
        self._scope(node.body, positional[0].arg if is_method else None)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._bind(node, node.name)
        for child in node.decorator_list + node.bases + node.keywords:
            self.visit(child)
        self._scope(node.body, class_body=True)

    def visit_Lambda(self, node):
        for child in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(child)
        self._scope([node.body])

    def _comprehension(self, node):
        self.comprehension += 1
        self.generic_visit(node)
        self.comprehension -= 1

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_ExceptHandler(self, node):
        if node.name:
            self._bind(node, node.name)
        self.generic_visit(node)

    # ------------------------------------------------------------------------- attributes
    def visit_Attribute(self, node):
        root = _root(node)
        root_name = root.id if isinstance(root, ast.Name) else None
        attr = node.attr
        own = root_name is not None and bool(self.selves) and root_name == self.selves[-1]
        value = node.value
        if isinstance(value, ast.Name) and value.id in self.classes:
            self.problem(
                node, f"uses `{_text(node)}` on the class itself: call methods on an instance"
            )
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "type"
        ):
            self.problem(node, f"uses `{_text(node)}`: answer cells may not reach into a type")
        if attr.startswith("__") and attr.endswith("__"):
            if attr not in ALLOWED_DUNDERS:
                self.problem(node, f"uses `{_text(node)}`: answer cells may not use `{attr}`")
        elif attr.startswith("_") and not own:
            self.problem(node, f"uses the private attribute `{_text(node)}`")
        elif attr in DENIED_ATTRIBUTES:
            self.problem(node, f"uses `{_text(node)}`, which answer cells may not use")
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._check_store(node, root_name)
        self.generic_visit(node)

    def visit_Subscript(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            root = _root(node)
            if not isinstance(root, ast.Name):
                self.problem(
                    node, f"assigns into `{_text(node)}`: assign into your own variables only"
                )
            elif root.id in self.imported or root.id in self.protected:
                self.problem(
                    node, f"changes `{_text(node)}`, part of `{root.id}` (monkey-patching)"
                )
        self.generic_visit(node)

    def _check_store(self, node, root_name):
        if root_name is not None and (root_name in self.imported or root_name in self.protected):
            self.problem(node, f"changes `{_text(node)}`, part of `{root_name}` (monkey-patching)")
        elif (
            root_name is not None
            and self.selves
            and root_name == self.selves[-1]
            or root_name is not None
            and node.attr in SAFE_ATTRIBUTE_STORES
        ):
            pass
        else:
            self.problem(
                node,
                f"assigns to `{_text(node)}`: answer cells may set attributes of `self` "
                f"(or a tensor's .grad/.data/.requires_grad) only",
            )

    # ------------------------------------------------------------------------------ calls
    def visit_Call(self, node):
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "get_ipython"
        ):
            self._magic(node, func.attr)
            return
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
            name = node.args[1]
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.problem(node, "calls getattr with a computed name: write the attribute out")
            elif name.value.startswith("_") or name.value in DENIED_ATTRIBUTES:
                self.problem(
                    node, f"calls getattr(..., {name.value!r}), which answer cells may not use"
                )
        for arg in node.args + [k.value for k in node.keywords]:
            if isinstance(arg, ast.Name) and arg.id in self.modules:
                self.problem(
                    node,
                    f"passes the module `{arg.id}` to a function: "
                    "answer cells may not hand modules around",
                )
        self.generic_visit(node)

    def _magic(self, node, method):
        args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        if (
            method == "run_line_magic"
            and len(args) >= 2
            and args[0] in LINE_MAGICS_CHECKED | LINE_MAGICS_HARMLESS
        ):
            if args[0] in LINE_MAGICS_CHECKED:
                self._nested(
                    node, re.sub(r"^(\s*-[nrp]\s*\d+|\s*-[tcqo])*", "", args[1] or "").strip()
                )
            return
        if method == "run_cell_magic" and len(args) >= 3 and args[0] in CELL_MAGICS_CHECKED:
            self._nested(node, args[2] or "")
            return
        what = (
            f"%{args[0]}"
            if method in ("run_line_magic", "run_cell_magic") and args and args[0]
            else "a shell command"
        )
        self.problem(
            node,
            f"uses {what}: answer cells may use only %time, %timeit, %%capture and %matplotlib",
        )

    def _nested(self, node, code):
        try:
            tree = ast.parse(code)
        except SyntaxError:
            self.problem(node, "has magic code that could not be checked")
            return
        for child in tree.body:
            self.visit(child)


def scan_code(
    source: str, protected: dict[str, str | None] | None = None, classes=frozenset()
) -> list[str]:
    """Problems that keep a learner's cell from being run at grading (empty: fine).

    protected: top-level names of the instructor's cells that the tests use, each with the import
    it stands for (``"torch"``, ``"attncourse.exercises.check_softmax"``) or None.
    classes: names of the classes the learner's cells define (their methods may set attributes of
    ``self``, so they must not be called through the class with another object as ``self``).
    """
    try:
        tree = ast.parse(python_source(source))
    except SyntaxError:
        return []  # it cannot run, so it cannot tamper with anything
    scanner = _Scanner(protected or {}, frozenset(classes))
    scanner.visit(tree)
    return scanner.problems


# ------------------------------------------------------------------------------ notebooks


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def is_test_cell(cell) -> bool:
    meta = _nbgrader(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and "grade_id" in meta


def is_solution_cell(cell) -> bool:
    return bool(_nbgrader(cell).get("solution"))


def _normalise(source: str) -> str:
    return source.replace("\r\n", "\n").rstrip()


def changed_test_cells(submission, release, instructor=None) -> dict[str, str]:
    """grade_id -> why, for each graded test cell not kept as released (deleted or edited).

    A test cell may also be the instructor's version of it (with its hidden tests).
    """
    originals = {}
    for nb in (release, instructor) if instructor is not None else (release,):
        for cell in nb.cells:
            if is_test_cell(cell):
                originals.setdefault(_nbgrader(cell)["grade_id"], set()).add(
                    (cell.cell_type, _normalise(cell.source))
                )
    changes = {}
    for cell in release.cells:
        if not is_test_cell(cell):
            continue
        grade_id = _nbgrader(cell)["grade_id"]
        copies = [c for c in submission.cells if _nbgrader(c).get("grade_id") == grade_id]
        if not copies:
            changes[grade_id] = "its test cell was deleted"
        elif any(
            (c.get("cell_type"), _normalise(c.get("source", ""))) not in originals[grade_id]
            for c in copies
        ):
            changes[grade_id] = "its test cell was edited (it must stay as released)"
    return changes


def protected_names(instructor) -> dict[str, str | None]:
    """Top-level names the instructor's cells bind that answer cells must not rebind.

    The names of the instructor's non-solution cells (imports, functions, data) that a test cell,
    hidden tests included, reads without binding them itself, directly or through the
    instructor's functions; the solution cells' names are the learner's to define.
    """
    own, reads_of, solution, needed = {}, {}, set(), set()
    for cell in instructor.cells:
        if cell.cell_type != "code":
            continue
        b = bindings(cell.source)
        if is_solution_cell(cell):
            solution |= set(b.bound)
            continue
        own.update(b.bound)
        reads_of.update(b.reads_of)
        if is_test_cell(cell):
            needed |= b.loaded_unbound
    todo = list(needed)
    while todo:  # and what the instructor's functions that the tests call read in turn
        for name in reads_of.get(todo.pop(), ()):
            if name not in needed:
                needed.add(name)
                todo.append(name)
    return {name: target for name, target in own.items() if name in needed and name not in solution}


@dataclass
class Finding:
    cell: int  # index in the submission
    grade_id: str | None  # the exercise whose test follows the cell (None: after the last test)
    problems: list[str]


def find_tampering(submission, release, instructor) -> list[Finding]:
    """Scan every code cell of the submission that is not one of the notebook's own cells.

    The notebook's own cells are the code cells of the release and of the instructor's version,
    except solution cells: what the learner writes is checked, what the course wrote is not.
    """
    released = {
        _normalise(c.source)
        for nb in (release, instructor)
        for c in nb.cells
        if c.cell_type == "code" and not is_solution_cell(c)
    }
    protected = protected_names(instructor)
    learner = [
        (i, c)
        for i, c in enumerate(submission.cells)
        if c.get("cell_type") == "code" and _normalise(c.get("source", "")) not in released
    ]
    classes = set()
    for _, cell in learner:
        try:
            tree = ast.parse(python_source(cell.get("source", "")))
        except SyntaxError:
            continue
        classes |= {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    findings = []
    for index, cell in learner:
        problems = scan_code(cell.get("source", ""), protected, classes)
        if problems:
            following = (c for c in submission.cells[index + 1 :] if is_test_cell(c))
            test = next(following, None)
            findings.append(Finding(index, _nbgrader(test)["grade_id"] if test else None, problems))
    return findings


def neutralised_source(problems: list[str]) -> str:
    """What a rejected cell is replaced with for grading: it raises and says why."""
    reason = "; ".join(problems)
    return (
        "# attncourse grade: this cell was not run, because it could change the checks:\n"
        + "".join(f"# - {p}\n" for p in problems)
        + f"raise RuntimeError({('this cell was not run at grading: ' + reason)!r})\n"
    )
