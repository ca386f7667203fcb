"""Read an answer's source before running it: does it compute the answer itself?

``scan(source, concepts, ...)`` parses the source (never runs it) and names each problem:

* a use of a PyTorch function or module of the exercise's concepts (``torch.softmax``,
  ``F.layer_norm``, ``nn.MultiheadAttention``) — called, stored or passed on — however it was
  imported or renamed; and of their methods on any value (``x.softmax``, ``loss.backward``);
* an import of the course's package (``attncourse``): a from-scratch answer writes its own;
* a private PyTorch name (``torch._softmax``, ``torch._C``);
* a lookup the scan cannot follow (``getattr``, ``eval``, ``exec``, ``__import__``,
  ``importlib``, ``sys``, ``operator``, ``__dict__``, ...): hiding what is called is refused,
  not guessed at;
* an assignment to (or deletion of) an attribute of a module or of something imported
  (``torch.allclose = ...``): an answer changes its own values, never the library's code.

Free names are resolved from ``imports`` (a notebook's import lines, for a grader that must not
run the answer) or from ``namespace`` (a running notebook's globals, where ``F`` or a renamed
``sm`` is looked up and compared by identity); the source's own imports and ``X = module.attr``
aliases are followed too. A source that cannot be parsed (a syntax error, an expression nested too
deep) is one problem, never a crash.
"""

from __future__ import annotations

import ast

from .. import guard

DYNAMIC_NAMES = frozenset(
    {"getattr", "setattr", "delattr", "eval", "exec", "compile", "__import__", "globals", "locals"}
    | {"vars", "breakpoint", "open"}
)
DYNAMIC_ATTRIBUTES = frozenset(
    {"__dict__", "__getattribute__", "__globals__", "__code__", "__builtins__", "__subclasses__"}
    | {"__class__", "__mro__", "__bases__", "__closure__", "__func__", "__self__", "__wrapped__"}
    | {"methodcaller", "attrgetter", "f_globals", "f_locals", "f_back", "tb_frame", "gi_frame"}
)
DYNAMIC_MODULES = frozenset(
    {"importlib", "sys", "builtins", "operator", "os", "ctypes", "inspect", "gc", "types"}
    | {"subprocess", "pickle", "marshal", "runpy", "pkgutil", "code", "codeop", "shutil"}
)
COURSE_PACKAGE = "attncourse"


def forbidden(concepts) -> tuple[frozenset[str], frozenset[str]]:
    """(qualified names, method names) an answer to an exercise on ``concepts`` must not use."""
    names = frozenset(guard.targets(concepts, course=False))
    # a torch method name called on any value: x.softmax(...), loss.backward()
    methods = frozenset(q.rsplit(".", 1)[1] for q in names if q.startswith("torch.Tensor."))
    return names, methods


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None for anything that is not a plain name chain."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _canonical(obj, known: dict[int, str]) -> str | None:
    """A running object's qualified name: a target's own name, a module's, or module.qualname."""
    if id(obj) in known:
        return known[id(obj)]
    if isinstance(obj, type(ast)):  # a module
        return obj.__name__
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{name}" if isinstance(module, str) and isinstance(name, str) else None


class _Scanner(ast.NodeVisitor):
    def __init__(self, concepts, imports: dict[str, str], namespace: dict | None):
        self.names, self.methods = forbidden(concepts)
        self.aliases, self.namespace = dict(imports), namespace
        self.problems, self.seen, self.known = [], set(), {}
        if namespace is not None:
            for qualified in self.names:
                obj = guard.resolve(qualified)
                if obj is not None:
                    self.known[id(obj)] = qualified

    def qualified(self, parts: list[str]) -> str | None:
        if parts[0] in self.aliases:
            return ".".join([self.aliases[parts[0]], *parts[1:]])
        if self.namespace is None or parts[0] not in self.namespace:
            return None
        obj = self.namespace[parts[0]]
        for depth, attribute in enumerate(parts[1:], 1):
            try:
                obj = getattr(obj, attribute)
            except Exception:  # not an attribute chain we can follow: name what we can
                base = _canonical(obj, self.known)
                return ".".join([base, *parts[depth:]]) if base else None
        return _canonical(obj, self.known)

    def note(self, node: ast.AST, problem: str) -> None:
        """Record ``problem`` (a phrase starting with a verb) once, as "line N <problem>"."""
        if problem not in self.seen:
            self.seen.add(problem)
            self.problems.append(f"line {getattr(node, 'lineno', '?')} {problem}")

    # imports and aliases ------------------------------------------------------------------
    def _module(self, node, module: str) -> None:
        root = module.split(".")[0]
        if root in DYNAMIC_MODULES:
            self.note(node, f"imports {module}, which can call anything unseen")
        elif root == COURSE_PACKAGE:
            self.note(node, f"imports the course's own {module}: write it yourself")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(node, alias.name)
            self.aliases[alias.asname or alias.name.split(".")[0]] = (
                alias.name if alias.asname else alias.name.split(".")[0]
            )

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._module(node, module)
        for alias in node.names:
            qualified = f"{module}.{alias.name}"
            if qualified in self.names:
                self.note(node, f"imports {qualified}, the built-in this exercise re-implements")
            self.aliases[alias.asname or alias.name] = qualified

    def visit_Assign(self, node: ast.Assign) -> None:
        parts = _dotted(node.value)
        if parts and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            qualified = self.qualified(parts)
            if qualified:
                self.aliases[node.targets[0].id] = qualified
        self._targets(node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._targets([node.target])
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self._targets(node.targets)
        self.generic_visit(node)

    def _targets(self, targets) -> None:
        for target in targets:
            if isinstance(target, ast.Tuple | ast.List):
                self._targets(target.elts)
            elif isinstance(target, ast.Attribute):
                parts = _dotted(target.value)
                owner = self.qualified(parts) if parts else None
                if owner is not None and owner.split(".")[0] != "__main__":
                    self.note(target, f"changes {owner}.{target.attr}, the library's own code")

    # what is used -------------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> None:
        parts = _dotted(node)
        qualified = self.qualified(parts) if parts else None
        if qualified and qualified.split(".")[0] == COURSE_PACKAGE:
            self.note(node, f"uses the course's own {qualified}: write it yourself")
            return  # the chain's root names the same thing
        if qualified in self.names:
            self.note(node, f"uses {qualified}, the built-in this exercise re-implements")
        elif node.attr in self.methods:
            self.note(node, f"uses .{node.attr}(), the built-in this exercise re-implements")
        elif node.attr in DYNAMIC_ATTRIBUTES:
            self.note(node, f"uses .{node.attr}, which hides what is called")
        elif node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = self.qualified(parts[:-1]) if parts else None
            if owner and owner.split(".")[0] == "torch":
                self.note(node, f"uses {owner}.{node.attr}, a private part of PyTorch")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in DYNAMIC_NAMES:
            self.note(node, f"uses {node.id}, which hides what is called")
        qualified = self.qualified([node.id])
        if qualified in self.names:
            self.note(node, f"uses {qualified}, the built-in this exercise re-implements")
        elif qualified and qualified.split(".")[0] == COURSE_PACKAGE:
            self.note(node, f"uses the course's own {qualified}: write it yourself")


def imports_of(source: str) -> dict[str, str]:
    """{name: qualified module or object} bound by the import lines of ``source`` ({} if it does
    not parse): what a notebook's setup cells give its answers."""
    scanner = _Scanner((), {}, None)
    try:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import | ast.ImportFrom):
                scanner.visit(node)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    return scanner.aliases


def scan(source: str, concepts, *, imports: dict[str, str] | None = None, namespace=None):
    """The problems of ``source`` as an answer on ``concepts`` (empty: none found)."""
    try:
        tree = ast.parse(source)
        scanner = _Scanner(concepts, imports or {}, namespace)
        scanner.visit(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return [f"cannot be read ({type(error).__name__}: {error})"[:200]]
    return scanner.problems
