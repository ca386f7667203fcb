"""Read an answer's source before running it: does it use only what an answer may use?

The rule for answers (``RULE``), the same for the visible check in the notebook and for
``attncourse grade``, which refuse with the same words ("line N uses ...: why"). An answer may use

* the public names of the modules an answer may use: those the notebook's first cell imports
  (torch, numpy as np, math, ...) and those it imports itself from ``IMPORTABLE`` (torch, numpy,
  math and a short list of standard modules; of ``sys`` and ``time`` only a few harmless names);
* Python's plain built-ins (``BUILTINS``: numbers, containers, iteration, ``print``, exceptions);
* the names it defines itself, and the learner's own functions from earlier answers.

It may not use

* what the exercise re-implements: every name of its concepts' families
  (``attncourse.guard.CONCEPTS``; the softmax family includes the cross-entropy losses,
  scaled-dot-product attention, the attention modules and ``torch.distributions``; entropy
  includes ``torch.special.entr`` and the distributions' entropies; automatic differentiation
  includes forward-mode AD, ``torch.func`` and a tensor's ``grad_fn``), however it is imported,
  renamed or reached (``torch.nn.functional.torch.softmax`` is ``torch.softmax``), nor their
  methods on any value (``x.softmax()``, ``loss.backward()``);
* the course's own package, ``attncourse``;
* a private or dunder attribute or module (``torch._softmax``, ``x.__class__``, ``torch._C``);
* anything that hides what is called: the built-ins that look names up or run code (``getattr``,
  ``eval``, ``exec``, ``open``, ...; ``DYNAMIC_NAMES``), the parts of torch and numpy that do
  (``ROUTES``: ``torch.ops``, ``torch.jit``, ``torch.load``, ``numpy.load``, ...), frame and
  traceback attributes (``DYNAMIC_ATTRIBUTES``), a module passed around as a value
  (``[torch][0]``), and ``from module import *``;
* a change to a library's attributes (``torch.allclose = ...``).

Names are followed through the answer's imports and aliases (``F = torch.nn.functional``) and,
for a running notebook, through its globals (``namespace``); every module reached is judged by
its own name, so ``torch.sys`` is ``sys``. A name the answer binds in several ways is judged in
each of them. IPython's magics are translated first, as the kernel does (``python_of``), so the
scan and the grader's run read the same code. A source that cannot be parsed is one problem,
never a crash.
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
import threading
import types
import warnings
from dataclasses import dataclass

from .. import guard
from ..i18n import say

# modules an answer may import (and use the public names of); a set: only those names
IMPORTABLE: dict[str, frozenset[str] | None] = {
    "torch": None,
    "numpy": None,
    "math": None,
    "cmath": None,
    "itertools": None,
    "functools": None,
    "collections": None,
    "typing": None,
    "dataclasses": None,
    "numbers": None,
    "fractions": None,
    "statistics": None,
    "heapq": None,
    "bisect": None,
    "warnings": None,
    "sys": frozenset(
        {"float_info", "int_info", "maxsize", "version", "version_info", "platform"}
        | {"byteorder", "stdout", "stderr", "getrecursionlimit", "getsizeof"}
    ),
    "time": frozenset(
        {"time", "perf_counter", "monotonic", "process_time", "sleep"}
        | {"time_ns", "perf_counter_ns", "monotonic_ns", "process_time_ns"}
    ),
}
IMPORTABLE_TEXT = (
    "torch, numpy, math and the standard modules cmath, itertools, functools, collections, "
    "typing, dataclasses, numbers, fractions, statistics, heapq, bisect, warnings, time and sys"
)
# parts of the allowed modules that look code up by name, load it or run it
ROUTES = (
    "torch.ops",
    "torch.library",
    "torch.classes",
    "torch.jit",
    "torch.compile",
    "torch.compiler",
    "torch.fx",
    "torch.export",
    "torch.onnx",
    "torch.package",
    "torch.hub",
    "torch.utils",
    "torch.load",
    "torch.serialization",
    "torch.overrides",
    "torch.multiprocessing",
    "torch.distributed",
    "torch.testing",
    "torch.cpp",
    "numpy.load",
    "numpy.lib.format",
    "numpy.lib.npyio",
    "numpy.lib.utils",
    "numpy.ctypeslib",
    "numpy.f2py",
    "numpy.distutils",
    "numpy.testing",
    "typing.get_type_hints",
    "typing.ForwardRef",
    "typing.evaluate_forward_ref",
)
BUILTINS = frozenset(
    {"abs", "all", "any", "bin", "bool", "bytes", "callable", "chr", "classmethod", "complex"}
    | {"dict", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hasattr"}
    | {"hash", "hex", "id", "int", "isinstance", "issubclass", "iter", "len", "list", "map"}
    | {"max", "min", "next", "object", "oct", "ord", "pow", "print", "property", "range"}
    | {"repr", "reversed", "round", "set", "slice", "sorted", "staticmethod", "str", "sum"}
    | {"super", "tuple", "type", "zip", "Ellipsis", "NotImplemented", "True", "False", "None"}
    | {name for name, value in vars(builtins).items() if isinstance(value, type)}
    & {name for name in dir(builtins) if name.endswith(("Error", "Exception", "Warning"))}
    | {"StopIteration", "StopAsyncIteration", "KeyboardInterrupt", "SystemExit", "GeneratorExit"}
)
DYNAMIC_NAMES = frozenset(
    {"getattr", "setattr", "delattr", "eval", "exec", "compile", "__import__", "globals", "locals"}
    | {"vars", "breakpoint", "open", "input", "help", "dir", "memoryview", "__builtins__"}
    | {"__build_class__", "__loader__", "__spec__", "get_ipython", "exit", "quit"}
)
DYNAMIC_ATTRIBUTES = frozenset(
    {"f_globals", "f_locals", "f_back", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next"}
    | {"gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "obj"}
)
COURSE_PACKAGE = "attncourse"
CAN_CHANGE = "__main__"  # attributes an answer may assign: its own module's

# the rule, in the words of the refusals (for the exercise texts and the README)
RULE = (
    f"An answer may use the public names of {IMPORTABLE_TEXT} (of time and sys only a few), "
    "Python's plain built-ins and its own functions. It may not use what the exercise "
    "re-implements, the course's own attncourse, names starting with _, or anything that "
    "hides what is called (getattr, eval, exec, open, torch.ops, torch.jit, torch.load, "
    "numpy.load, frame attributes, a module passed around as a value, import *)."
)

# the refusals, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in). A problem
# is (template, fields) until it is said; an import's problem is its use's twin (``IMPORTS``).
LINE = "line {line} {problem}"
USES_COURSE = "uses the course's own {name}: write it yourself"
IMPORTS_COURSE = "imports the course's own {name}: write it yourself"
_SCRATCH = ", which computes {what} already: write it from plain tensor operations"
USES_COMPUTING = "uses {name}" + _SCRATCH
IMPORTS_COMPUTING = "imports {name}" + _SCRATCH
USES_METHOD = "uses .{name}()" + _SCRATCH
_DYNAMIC = ", which hides what is called: answers name what they call"
USES_DYNAMIC = "uses {name}" + _DYNAMIC
IMPORTS_DYNAMIC = "imports {name}" + _DYNAMIC
_PRIVATE = ": answers may not use private names (starting with _)"
USES_PRIVATE = "uses {name}" + _PRIVATE
IMPORTS_PRIVATE = "imports {name}" + _PRIVATE
USES_OUTSIDE = "uses {name}: answers may use only {importable}"
IMPORTS_OUTSIDE = "imports {name}: answers may use only {importable}"
IMPORTS_MODULE_OUTSIDE = "imports {name}: answers may import only from {importable}"
USES_PART = "uses {name}: of {module}, answers may use only {allowed}"
IMPORTS_PART = "imports {name}: of {module}, answers may use only {allowed}"
USES_NOTEBOOK = (
    "uses {name}, which a cell of the chapter defines, not this answer's cell: when graded, only "
    "the answer cells and the notebook's imports run, so define it in the answer's cell"
)
USES_BUILTIN = (
    "uses the built-in {name}: answers may use only the plain built-ins (numbers, containers, "
    "iteration, print, exceptions)"
)
USES_MODULE = (
    "uses the module {name} as a value, which hides what is called: answers use a module only "
    "as {name}.name"
)
IMPORTS_RELATIVE = "imports from {name}: answers import modules"
IMPORTS_STAR = "imports * from {name}: answers import names one by one"
CHANGES = "changes {name}, the library's own code"
UNREADABLE = "cannot be read ({error})"
IMPORTS = {
    USES_COURSE: IMPORTS_COURSE,
    USES_COMPUTING: IMPORTS_COMPUTING,
    USES_DYNAMIC: IMPORTS_DYNAMIC,
    USES_PRIVATE: IMPORTS_PRIVATE,
    USES_OUTSIDE: IMPORTS_OUTSIDE,
    USES_PART: IMPORTS_PART,
}
SENTENCES = (
    LINE,
    *IMPORTS,
    *IMPORTS.values(),
    USES_METHOD,
    USES_NOTEBOOK,
    IMPORTS_MODULE_OUTSIDE,
    USES_BUILTIN,
    USES_MODULE,
    IMPORTS_RELATIVE,
    IMPORTS_STAR,
    CHANGES,
    UNREADABLE,
    IMPORTABLE_TEXT,
)


def _computing(name: str, description: str) -> tuple[str, dict]:
    return USES_COMPUTING, {"name": name, "what": description}


def _outside(name: str) -> tuple[str, dict]:
    return USES_OUTSIDE, {"name": name, "importable": IMPORTABLE_TEXT}


def _said(problem: tuple[str, dict]) -> str:
    """A problem in words: the learner's language, the concept and the modules translated too."""
    template, fields = problem
    fields = dict(fields)
    for key in ("what", "importable"):
        if key in fields:
            fields[key] = say(fields[key])
    return say(template, **fields)


# ------------------------------------------------------------------------------ magics


def _magic_call(node: ast.AST) -> tuple[str, list] | None:
    """``get_ipython().method(args)`` with constant arguments: (method, args)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "get_ipython"
        and not node.func.value.args
        and not node.keywords
        and node.func.attr in ("run_line_magic", "run_cell_magic", "system", "getoutput")
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)
    ):
        return node.func.attr, [a.value for a in node.args]
    return None


class _Magics(ast.NodeTransformer):
    """IPython's translation of magics, run as the kernel runs it: ``%time stmt``, ``%%time``
    and ``%%capture`` run their code in the notebook's namespace, so their code is the answer;
    every other magic and shell command changes nothing an answer defines, so it is nothing."""

    def visit_Expr(self, node: ast.Expr):
        call = _magic_call(node.value)
        if call is None:
            return self.generic_visit(node)
        method, args = call
        if method == "run_line_magic" and len(args) == 2 and args[0] == "time":
            body = python_of(args[1]).body  # one line: the magic's own
            for child in (c for statement in body for c in ast.walk(statement)):
                if hasattr(child, "lineno"):
                    child.lineno = child.end_lineno = node.lineno
            return body or ast.copy_location(ast.Pass(), node)
        if method == "run_cell_magic" and len(args) == 3 and args[0] in ("time", "capture"):
            body = python_of(args[2]).body  # the lines after the magic's
            for statement in body:
                ast.increment_lineno(statement, node.lineno)
            return body or ast.copy_location(ast.Pass(), node)
        return ast.copy_location(ast.Pass(), node)

    def visit_Call(self, node: ast.Call):
        if _magic_call(node) is not None:  # x = !ls, y = %timeit -o f()
            return ast.copy_location(ast.Constant(None), node)
        return self.generic_visit(node)


_MAGIC_LINE = re.compile(r"^\s*[%!]|=\s*[%!]|\?\s*$", re.M)  # %magic, !shell, x = !ls, obj?

# CPython 3.11 counts ast.parse's nesting depth once per interpreter, not per thread: two threads
# parsing at once (the grader marks several submissions in threads) can make one of them fail
# with "SystemError: AST constructor recursion depth mismatch".
_PARSING = threading.RLock()


def parse(source: str) -> ast.Module:
    """``ast.parse``, one thread at a time."""
    with _PARSING:
        return ast.parse(source)


def python_of(source: str) -> ast.Module:
    """The cell as the Python the kernel runs: IPython's magics translated (see ``_Magics``);
    ``SyntaxError`` (or ``ValueError``, ``RecursionError``, ``MemoryError``) if it is not Python.
    The grader runs exactly this, and reads exactly this."""
    if _MAGIC_LINE.search(source):
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    tree = parse(source)
    if "get_ipython" in source:
        tree = ast.fix_missing_locations(_Magics().visit(tree))
    return tree


# ------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class _Module:
    """What a name may stand for: a qualified module or object path (``torch.nn.functional``,
    ``torch.softmax``), resolved in the reader's process when its root may be used."""

    path: str


_VALUE = object()  # a name bound to a value the scan cannot know (a parameter, a result)
_SCOPES = (
    ast.Module,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None for anything that is not a plain name chain."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _alias(node: ast.AST) -> list[str] | None:
    """``X = a.b.c``: the dotted value's parts, when ``node`` is such an assignment."""
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    ):
        return _dotted(node.value)
    return None


def _canonical(obj) -> str | None:
    """A running object's qualified name: a module's, or module.qualname."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    try:
        module, name = obj.__module__, obj.__qualname__
    except Exception:  # not a function or class: a value
        return None
    if not (isinstance(module, str) and isinstance(name, str)):
        return None
    public = sys.modules.get(module.lstrip("_")) if module.startswith("_") else None
    if public is not None and getattr(public, name, None) is obj:  # _functools.reduce is
        module = public.__name__  # functools.reduce, as the learner imported it
    return f"{module}.{name}"


def _under(path: str, prefixes) -> str | None:
    return next((p for p in prefixes if path == p or path.startswith(p + ".")), None)


class _Scopes:
    """Python's scopes of a source: for each use of a name, what binds it there (a function's
    own names are local to it; a cell's may also be what came before, its imports)."""

    def __init__(self, tree: ast.Module):
        self.module = tree
        self.scope_of: dict[int, ast.AST] = {}
        self.parent: dict[int, ast.AST] = {}
        self.bindings: dict[int, dict[str, list]] = {id(tree): {}}
        self.declared: dict[int, dict[str, str]] = {id(tree): {}}
        self._walk(tree, tree)
        self._bind_all(tree)

    # which scope each node is in ---------------------------------------------------------
    def _enter(self, node, outer) -> None:
        self.parent[id(node)] = outer
        self.bindings[id(node)] = {}
        self.declared[id(node)] = {}

    def _arguments(self, args: ast.arguments, outer, inner) -> None:
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self._walk(default, outer)
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                self.scope_of[id(arg)] = inner
                if arg.annotation is not None:
                    self._walk(arg.annotation, outer)

    def _walk(self, node, scope) -> None:
        self.scope_of[id(node)] = scope
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self._enter(node, scope)
            for child in [*node.decorator_list, *([node.returns] if node.returns else [])]:
                self._walk(child, scope)
            self._arguments(node.args, scope, node)
            for statement in node.body:
                self._walk(statement, node)
        elif isinstance(node, ast.Lambda):
            self._enter(node, scope)
            self._arguments(node.args, scope, node)
            self._walk(node.body, node)
        elif isinstance(node, ast.ClassDef):
            self._enter(node, scope)
            for child in [*node.decorator_list, *node.bases, *node.keywords]:
                self._walk(child, scope)
            for statement in node.body:
                self._walk(statement, node)
        elif isinstance(node, _COMPREHENSIONS):
            self._enter(node, scope)
            for number, generator in enumerate(node.generators):
                self.scope_of[id(generator)] = node
                self._walk(generator.iter, scope if number == 0 else node)
                self._walk(generator.target, node)
                for condition in generator.ifs:
                    self._walk(condition, node)
            for child in [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]:
                self._walk(child, node)
        else:
            for child in ast.iter_child_nodes(node):
                self._walk(child, scope)

    # what each scope binds -----------------------------------------------------------------
    def _function_scope(self, scope):
        """Where a walrus in ``scope`` binds: the nearest scope that is not a comprehension."""
        while isinstance(scope, _COMPREHENSIONS):
            scope = self.parent[id(scope)]
        return scope

    def _bind(self, scope, name: str, how) -> None:
        self.bindings[id(scope)].setdefault(name, []).append(how)

    def _bind_all(self, tree) -> None:
        aliases = set()
        for node in ast.walk(tree):
            scope = self.scope_of.get(id(node), tree)
            parts = _alias(node)
            if parts is not None:
                aliases.add(id(node.targets[0]))
                self._bind(scope, node.targets[0].id, ("alias", parts, scope))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    self._bind(scope, name, ("import", alias.name if alias.asname else name))
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name != "*":
                        qualified = f"{node.module or ''}.{alias.name}"
                        self._bind(scope, alias.asname or alias.name, ("import", qualified))
            elif isinstance(node, ast.NamedExpr):
                aliases.add(id(node.target))
                self._bind(self._function_scope(scope), node.target.id, _VALUE)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                if id(node) not in aliases:
                    self._bind(scope, node.id, _VALUE)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self._bind(scope, node.name, _VALUE)
            elif isinstance(node, ast.arg):
                self._bind(scope, node.arg, _VALUE)
            elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
                self._bind(scope, node.name, _VALUE)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                self._bind(scope, node.rest, _VALUE)
            elif isinstance(node, ast.Global | ast.Nonlocal):
                kind = "global" if isinstance(node, ast.Global) else "nonlocal"
                for name in node.names:
                    self.declared[id(scope)][name] = kind
        # ast.walk visits an Assign before its target Name: the alias set is complete in time
        for scope_id, declared in self.declared.items():  # global x: bindings of the module
            for name, kind in declared.items():
                hows = self.bindings[scope_id].pop(name, [])
                target = self.module if kind == "global" else None
                if target is None:  # nonlocal: the nearest enclosing function that binds it
                    scope = self._scope(scope_id)
                    target = self.parent.get(id(scope), self.module)
                    while target is not self.module and not (
                        isinstance(target, _FUNCTIONS) and name in self.bindings[id(target)]
                    ):
                        target = self.parent.get(id(target), self.module)
                self.bindings[id(target)].setdefault(name, []).extend(hows)

    def _scope(self, scope_id: int):
        return next((s for s in self.scope_of.values() if id(s) == scope_id), self.module)

    def lookup(self, name: str, scope) -> tuple[list, bool]:
        """(the bindings of ``name`` as used in ``scope``, whether it may also be what the cell
        was given: the notebook's imports, globals or built-ins)."""
        found, from_class = [], False
        while True:
            declared = self.declared[id(scope)].get(name)
            if scope is self.module or declared == "global":
                return found + self.bindings[id(self.module)].get(name, []), True
            if isinstance(scope, ast.ClassDef):  # a class body's names, and what is around it
                found += self.bindings[id(scope)].get(name, [])
                from_class = True
            elif name in self.bindings[id(scope)] and declared != "nonlocal":
                return found + self.bindings[id(scope)][name], False
            scope = self.parent[id(scope)]
            while from_class and isinstance(scope, ast.ClassDef):
                scope = self.parent[id(scope)]


class _Scanner(ast.NodeVisitor):
    def __init__(
        self, concepts, imports: dict[str, str], namespace: dict | None, tree, notebook=()
    ):
        concepts = tuple(concepts)
        self.family = guard.targets(concepts, course=False)  # qualified name -> description
        self.packages = guard.packages(concepts)  # module -> description
        self.methods = {
            q.rsplit(".", 1)[1]: d for q, d in self.family.items() if q.startswith("torch.Tensor.")
        }
        self.objects = {}  # id of a family member -> (its name, description)
        for qualified, description in self.family.items():
            obj = guard.resolve(qualified)
            if obj is not None and not isinstance(obj, int | float | str):
                self.objects.setdefault(id(obj), (qualified, description))
        self.namespace = namespace
        self.own = namespace.get("__name__", "__main__") if namespace is not None else "__main__"
        self.imports = dict(imports)
        self.notebook = frozenset(notebook)  # what the chapter's own cells define
        self.scopes = _Scopes(tree)
        self.problems, self.seen = [], set()
        self.aliased = {id(node.value) for node in ast.walk(tree) if _alias(node)}

    def note(self, node: ast.AST, problem: tuple[str, dict]) -> None:
        """Record ``problem`` ((template, fields) of a phrase starting with a verb) once, as
        "line N <problem>"."""
        text = _said(problem)
        if text not in self.seen:
            self.seen.add(text)
            self.problems.append(say(LINE, line=getattr(node, "lineno", "?"), problem=text))

    # what a name stands for --------------------------------------------------------------
    def meanings(self, name: str, scope, depth: int = 0) -> list:
        """Each thing ``name`` may stand for where ``scope`` uses it: ``_Module(path)`` (a
        module or an object of one, by qualified path), ``("object", obj)`` (a running
        notebook's), ``("chain", obj, attributes)``, ``("builtin", name)``, ``("own", name)``
        (the learner's own function), ``("unknown", name)`` or ``_VALUE``."""
        hows, outside = self.scopes.lookup(name, scope)
        found = []
        for how in hows:
            if how is _VALUE:
                found.append(_VALUE)
            elif how[0] == "import":
                found.append(_Module(how[1]))
            elif depth < 8:  # an alias: what its chain's root stands for, then the chain
                parts, where = how[1], how[2]
                for base in self.meanings(parts[0], where, depth + 1):
                    if isinstance(base, _Module):
                        found.append(_Module(".".join([base.path, *parts[1:]])))
                    elif isinstance(base, tuple) and base[0] == "object":
                        found.append(("chain", base[1], parts[1:]))
                    elif isinstance(base, tuple) and base[0] == "chain":
                        found.append(("chain", base[1], [*base[2], *parts[1:]]))
                    else:
                        found.append(base)
        if outside:
            found += self.given(name)
        return found or [_VALUE]

    def given(self, name: str) -> list:
        """What ``name`` is before the answer runs: an import, a notebook global, a built-in."""
        if name in self.imports:
            return [_Module(self.imports[name])]
        if name in self.notebook:
            return [("notebook", name)]
        if (
            self.namespace is not None
            and name in self.namespace
            and name not in DYNAMIC_NAMES
            and self.namespace[name] is not getattr(builtins, name, object())
        ):
            obj = self.namespace[name]
            if (
                isinstance(obj, types.FunctionType | type)
                and getattr(obj, "__module__", None) == self.own
            ):
                return [("own", name)]
            return [("object", obj)]
        if hasattr(builtins, name):
            return [("builtin", name)]
        return [("unknown", name)]

    # judging a path ------------------------------------------------------------------------
    def judge(self, path: str, obj, *, written: bool, rest=()) -> tuple[str, dict] | None:
        """The problem with using ``path`` (the object ``obj``, when known), or None.
        ``written``: the path is the answer's own spelling (a canonical one, found from a
        running object, may pass through private modules: ``torch._functorch...vmap``)."""
        parts = path.split(".")
        root = parts[0]
        if root == COURSE_PACKAGE:
            return USES_COURSE, {"name": path}
        if obj is not None and id(obj) in self.objects:
            name, description = self.objects[id(obj)]
            return _computing(path if written else name, description)
        if path in self.family:
            return _computing(path, self.family[path])
        whole = ".".join([path, *rest])  # a whole module's member, named in full
        package = _under(path, self.packages)
        if package:
            return _computing(whole, self.packages[package])
        if _under(path, ROUTES):
            return USES_DYNAMIC, {"name": whole}
        if root == self.own:
            return None
        if written and any(part.startswith("_") for part in parts):
            return USES_PRIVATE, {"name": path}
        if root not in IMPORTABLE:
            return _outside(path)
        allowed = IMPORTABLE[root]
        if allowed is not None and len(parts) > 1 and parts[1] not in allowed:
            return USES_PART, {"name": path, "module": root, "allowed": ", ".join(sorted(allowed))}
        return None

    def follow(self, start: str, obj, attributes: list[str], *, written: bool):
        """Walk ``start.attr.attr...`` (``obj``: what ``start`` is, or None to find it when
        its root may be used), naming every module reached by its own name (``torch.sys`` is
        ``sys``). Returns (the first problem or None, the object reached or None, its path)."""
        path = start
        if path.split(".")[0] == COURSE_PACKAGE:  # named as the answer names it, in full
            path = ".".join([path, *attributes])
            return (USES_COURSE, {"name": path}), None, path
        if obj is None and written:
            problem = self.judge(path, None, written=True, rest=attributes)
            if problem:
                return problem, None, path
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = guard.resolve(path)
        if isinstance(obj, types.ModuleType):
            path = obj.__name__
        problem = self.judge(path, obj, written=written, rest=attributes)
        if problem:
            return problem, obj, path
        for number, attribute in enumerate(attributes, 1):
            rest = attributes[number:]
            if attribute.startswith("_"):
                return (USES_PRIVATE, {"name": f"{path}.{attribute}"}), None, path
            if attribute in DYNAMIC_ATTRIBUTES and not isinstance(obj, types.ModuleType):
                return (USES_DYNAMIC, {"name": f".{attribute}"}), None, path
            if obj is not None and not isinstance(obj, types.ModuleType | type):
                # an attribute of a value (a method of a function, say): judged by its name
                return self.value_attribute(attribute), None, path
            path = f"{path}.{attribute}"
            problem = self.judge(path, None, written=True, rest=rest)
            if problem:
                return problem, None, path
            if obj is not None:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        obj = getattr(obj, attribute)
                except Exception:  # not there: judged by its path alone
                    obj = None
            if isinstance(obj, types.ModuleType):
                path = obj.__name__
            problem = self.judge(path, obj, written=True, rest=rest)
            if problem:
                return problem, obj, path
        return None, obj, path

    def use(self, node: ast.AST, parts: list[str]) -> None:
        """A use of the chain ``parts``, whose value is itself used (called, stored, passed)."""
        name, attributes = parts[0], parts[1:]
        if name in DYNAMIC_NAMES:
            self.note(node, (USES_DYNAMIC, {"name": name}))
            return
        scope = self.scopes.scope_of.get(id(node), self.scopes.module)
        for meaning in self.meanings(name, scope):
            if meaning is _VALUE or (isinstance(meaning, tuple) and meaning[0] == "own"):
                self.attributes(node, attributes)
                continue
            if isinstance(meaning, tuple) and meaning[0] == "notebook":
                self.note(node, (USES_NOTEBOOK, {"name": name}))
                continue
            if isinstance(meaning, tuple) and meaning[0] == "unknown":  # an earlier answer's
                self.attributes(node, attributes)
                continue
            if isinstance(meaning, tuple) and meaning[0] == "builtin":
                if name not in BUILTINS:
                    self.note(node, (USES_BUILTIN, {"name": name}))
                self.attributes(node, attributes)
                continue
            if isinstance(meaning, _Module):
                start, obj, rest, written = meaning.path, None, attributes, True
            else:  # a running notebook's object, or a chain of attributes from one
                obj = meaning[1]
                rest = [*meaning[2], *attributes] if meaning[0] == "chain" else attributes
                start, written = _canonical(obj), False
                if start is None:  # a value (a tensor, a number): its attributes by name
                    self.attributes(node, rest)
                    continue
            problem, reached, path = self.follow(start, obj, list(rest), written=written)
            if problem:
                self.note(node, problem)
            elif isinstance(reached, types.ModuleType) and id(node) not in self.aliased:
                self.note(node, (USES_MODULE, {"name": path}))

    def value_attribute(self, attribute: str) -> tuple[str, dict] | None:
        """The problem with ``value.attribute`` for a value the scan cannot know, or None."""
        if attribute.startswith("_"):
            return USES_PRIVATE, {"name": f".{attribute}"}
        if attribute in self.methods:
            return USES_METHOD, {"name": attribute, "what": self.methods[attribute]}
        if attribute in DYNAMIC_ATTRIBUTES:
            return USES_DYNAMIC, {"name": f".{attribute}"}
        return None

    def attributes(self, node: ast.AST, attributes: list[str]) -> None:
        """Attributes of a value the scan cannot know, judged by their names."""
        for attribute in attributes:
            problem = self.value_attribute(attribute)
            if problem:
                self.note(node, problem)
                return

    # the tree ----------------------------------------------------------------------------
    def _module(self, node, module: str, names=()) -> None:
        """An import of ``module`` (and of ``names`` from it)."""
        parts = module.split(".")
        if parts[0] == COURSE_PACKAGE:
            self.note(node, (IMPORTS_COURSE, {"name": module}))
        elif any(part.startswith("_") for part in parts):
            self.note(node, (IMPORTS_PRIVATE, {"name": module}))
        elif parts[0] not in IMPORTABLE:
            self.note(
                node, (IMPORTS_MODULE_OUTSIDE, {"name": module, "importable": IMPORTABLE_TEXT})
            )
        else:
            for name in names or [None]:
                problem, _, _ = self.follow(module, None, [name] if name else [], written=True)
                if problem:
                    template, fields = problem
                    self.note(node, (IMPORTS.get(template, template), fields))
                    return

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.note(node, (IMPORTS_RELATIVE, {"name": "." * node.level + module}))
            return
        if any(alias.name == "*" for alias in node.names):
            self.note(node, (IMPORTS_STAR, {"name": module}))
            return
        self._module(node, module, [alias.name for alias in node.names])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        parts = _dotted(node)
        if parts is None:  # an attribute of an expression's value, judged by its name
            problem = self.value_attribute(node.attr)
            if problem:
                self.note(node, problem)
            self.generic_visit(node)
            return
        if isinstance(node.ctx, ast.Store | ast.Del):
            self._change(node, parts)
            return
        self.use(node, parts)  # the chain is judged whole: its parts are not visited again

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.use(node, [node.id])
        elif node.id in DYNAMIC_NAMES:
            self.note(node, (USES_DYNAMIC, {"name": node.id}))

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        for attribute in node.kwd_attrs:  # case Tensor(softmax=f) reads x.softmax
            problem = self.value_attribute(attribute)
            if problem:
                self.note(node, problem)
        self.generic_visit(node)

    def _change(self, node: ast.Attribute, parts: list[str]) -> None:
        """An assignment to (or deletion of) ``a.b.c``: only an answer's own values."""
        scope = self.scopes.scope_of.get(id(node), self.scopes.module)
        for meaning in self.meanings(parts[0], scope):
            if isinstance(meaning, _Module):
                base = meaning.path
            elif isinstance(meaning, tuple) and meaning[0] in ("object", "chain"):
                base = _canonical(meaning[1])
                if base is not None and meaning[0] == "chain":
                    base = ".".join([base, *meaning[2]])
            elif isinstance(meaning, tuple) and meaning[0] == "builtin":
                base = f"builtins.{parts[0]}"
            else:
                base = None
            if base is not None and base.split(".")[0] not in (CAN_CHANGE, self.own):
                owner = ".".join([base, *parts[1:-1]])
                self.note(node, (CHANGES, {"name": f"{owner}.{parts[-1]}"}))
                return
        self.attributes(node, parts[1:])


def notebook_names(cells) -> frozenset[str]:
    """The names a notebook's own code cells (of ``cells``, its JSON cells: not the answer or
    check cells, which carry nbgrader metadata) bind at the top level by anything but an import,
    less Python's built-ins (which a grader has too): what a running notebook has and a grader
    does not."""
    names, imported = set(), set()
    for cell in cells:
        if cell.get("cell_type") != "code" or "nbgrader" in cell.get("metadata", {}):
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        try:
            tree = python_of(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        imported |= set(_imports_in(tree))
        for statement in tree.body:
            if isinstance(statement, ast.Import | ast.ImportFrom):
                continue
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(statement.name)
                continue
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
    return frozenset(names - imported - set(dir(builtins)))


def imports_of(source: str) -> dict[str, str]:
    """{name: qualified module or object} bound by the import lines of ``source`` ({} if it does
    not parse): what a notebook's setup cells give its answers."""
    try:
        return _imports_in(python_of(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}


def _imports_in(tree: ast.AST) -> dict[str, str]:
    """What the import lines of a parsed cell bind (``imports_of``)."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
                else:
                    found[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def scan(
    source: str, concepts, *, imports: dict[str, str] | None = None, namespace=None, notebook=()
):
    """The problems of ``source`` as an answer on ``concepts`` (empty: none found), each as
    "line N <what>: <the rule>". Free names are resolved from ``imports`` (the notebook's import
    lines, for a grader that must not run the answer) or ``namespace`` (a running notebook's
    globals); one that the chapter's own cells define (``notebook``: ``notebook_names``) is
    refused, since the grader runs only answer cells."""
    try:
        tree = python_of(source)
        scanner = _Scanner(concepts, imports or {}, namespace, tree, notebook)
        scanner.visit(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return [say(UNREADABLE, error=f"{type(error).__name__}: {error}")[:200]]
    return scanner.problems


def forbidden(concepts) -> tuple[frozenset[str], frozenset[str]]:
    """(qualified names, method names) an answer to an exercise on ``concepts`` must not use."""
    names = frozenset(guard.targets(concepts, course=False))
    methods = frozenset(q.rsplit(".", 1)[1] for q in names if q.startswith("torch.Tensor."))
    return names, methods


def rule_for(concepts) -> str:
    """The rule for an answer to an exercise on ``concepts``, in words: ``RULE`` and what the
    exercise re-implements (for its text)."""
    names = sorted(guard.targets(concepts, course=False)) + sorted(guard.packages(concepts))
    if not names:
        return RULE
    return RULE + " Here that is: " + ", ".join(names) + "."
