"""One chapter number links a chapter's pieces, and the mechanisms stay apart from chapter code."""

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attncourse"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CHAPTER_LAYERS = ("chapters", "exercises", "classroom")


def imported_modules(path: Path) -> set[str]:
    """Absolute names of the package modules that a file imports (relative imports resolved)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    package = parts[:-1] if path.name != "__init__.py" else parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join((*base, node.module)) if node.module else ".".join(base)
            names |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return names


MECHANISM_FILES = sorted(
    p
    for p in PACKAGE.rglob("*.py")
    if p.relative_to(PACKAGE).parts[0] not in CHAPTER_LAYERS and p.name != "__main__.py"
)


@pytest.mark.parametrize("path", MECHANISM_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_mechanisms_never_import_chapter_exercise_or_classroom_code(path):
    forbidden = {f"attncourse.{layer}" for layer in CHAPTER_LAYERS}
    bad = {m for m in imported_modules(path) if any(m.startswith(f) for f in forbidden)}
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def check_modules(notebook: Path) -> set[str]:
    """The ``attncourse.exercises.chNN`` modules a notebook's cells import."""
    source = "".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"])
    return set(re.findall(r"attncourse\.exercises\.(ch\d\d)\b", source))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_chapter_number_finds_its_code_checks_and_tests(notebook):
    number, name = notebook.stem[:2], notebook.stem
    code = PACKAGE / "chapters" / f"ch{name}"
    assert code.with_suffix(".py").is_file() or (code / "__init__.py").is_file(), (
        f"notebook {notebook.name}: its code belongs in attncourse/chapters/ch{name}(.py)"
    )
    assert list((ROOT / "tests" / "chapters").glob(f"test_ch{number}_*.py")), (
        f"notebook {notebook.name}: no tests/chapters/test_ch{number}_*.py"
    )
    for module in check_modules(notebook):
        assert module == f"ch{number}", f"notebook {notebook.name} uses another chapter's checks"
        assert (PACKAGE / "exercises" / f"ch{number}.py").is_file()
        assert (ROOT / "tests" / "exercises" / f"test_ch{number}.py").is_file()


def test_every_training_script_keeps_a_chapter_number():
    """A script that makes shipped weights is ``train_chNN.py`` for an existing chapter; the
    other scripts (``slides.py``) work on every chapter alike."""
    scripts = sorted((ROOT / "scripts").glob("*train*.py"))
    chapters = {p.stem[:2] for p in NOTEBOOKS}
    assert scripts
    for script in scripts:
        assert script.stem.startswith("train_ch") and script.stem[8:10] in chapters, script.name
