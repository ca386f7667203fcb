"""A learner's install is light: `start` needs none of the extras, and a command whose extra is
missing says which one to install instead of failing on an import."""

import ast
import subprocess
import sys
import tomllib

import pytest
from classroom_helpers import FIXTURES, ROOT

from attncourse.classroom.extras import COMMANDS, EXTRAS

# A Python that cannot import the extras' packages, as in a learner's install
WITHOUT_EXTRAS = """
import sys
BLOCKED = {blocked!r}
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
sys.meta_path.insert(0, Block())
from attncourse.classroom.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_without_extras(*args, tmp_path):
    blocked = sorted({m for modules in EXTRAS.values() for m in modules})
    code = WITHOUT_EXTRAS.format(blocked=blocked)
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )


def test_start_needs_no_extra(tmp_path):
    done = run_without_extras("start", "--source", FIXTURES, "--version", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "workspace" / "99_pipeline_fixture.ipynb").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ["present", "01"],
        ["site", "--out", "site"],
        ["release", "--out", "out"],
        ["grade", "x.ipynb"],
        ["progress"],
    ],
    ids=lambda a: a[0],
)
def test_a_command_without_its_extra_names_the_extra(args, tmp_path):
    done = run_without_extras(*args, tmp_path=tmp_path)
    extra = COMMANDS[args[0]]
    assert done.returncode == 2, done.stderr
    assert f'pip install "attncourse[{extra}]"' in done.stderr
    assert "Traceback" not in done.stderr


def test_the_extras_named_are_the_extras_of_the_package():
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(COMMANDS.values()) <= set(optional)


# the modules of NAMES a fresh Python has imported once it has run CODE
IMPORTED = "import sys\n{code}\nprint(sorted(m for m in {names!r} if sys.modules.get(m)))"


def imported_after(code: str, names: list[str]) -> list[str]:
    command = [sys.executable, "-c", IMPORTED.format(code=code, names=names)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return ast.literal_eval(result.stdout.splitlines()[-1])


def test_a_command_reads_and_validates_notebooks_without_rfc3987_syntax_s_parsers():
    """jsonschema would import rfc3987_syntax (about 1 s of parser building) only for a string
    format no notebook uses: the classroom commands go without it, and still validate."""
    code = (
        "from attncourse.classroom.notebooks import DEFAULT_SOURCE, read_notebook\n"
        "import nbformat\n"
        "nbformat.validate(read_notebook(next(DEFAULT_SOURCE.glob('01_*.ipynb'))))"
    )
    names = ["nbformat", "jsonschema", "rfc3987_syntax"]
    assert imported_after(code, names) == ["jsonschema", "nbformat"]


def test_the_site_s_sphinx_reads_notebooks_without_rfc3987_syntax_s_parsers():
    """Sphinx builds the site in a process of its own; the site's conf.py, which Sphinx reads
    before it loads the extensions, keeps myst-nb's nbformat from importing rfc3987_syntax."""
    from attncourse.classroom.site import CONF_PY

    code = f"exec({CONF_PY!r}, {{}})\nimport myst_nb.sphinx_ext"
    assert imported_after(code, ["nbformat", "rfc3987_syntax"]) == ["nbformat"]


@pytest.mark.parametrize("app", ["jupyterlab", "voila"])
def test_the_servers_start_and_present_run_start_without_rfc3987_syntax_s_parsers(app):
    """``attncourse start`` and ``present`` run their server through attncourse.classroom.serve,
    which takes the app's own arguments; its server imports jsonschema, not rfc3987_syntax."""
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['serve', {app!r}, '--version']\n"
        "try:\n"
        "    runpy.run_module('attncourse.classroom.serve', run_name='__main__')\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "import jupyter_server.serverapp"
    )
    assert imported_after(code, ["jsonschema", "rfc3987_syntax"]) == ["jsonschema"]


def test_the_test_suite_s_pytest_reads_notebooks_without_rfc3987_syntax_s_parsers():
    """Every pytest process of the test command (each xdist worker too) loads nbval's plugin,
    which imports nbformat: the project's pytest options load attncourse.classroom before it."""
    code = (
        "import pytest\n"
        "status = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', "
        "'notebooks/00_how_to_use.ipynb'])\n"
        "assert status == 0, status"
    )
    assert imported_after(code, ["nbformat", "nbval", "rfc3987_syntax"]) == ["nbformat", "nbval"]


def test_a_learner_s_check_reads_its_chapter_without_nbformat():
    """The check's reading of the chapter's own names (the first check of a kernel) is JSON."""
    code = (
        "from attncourse.exercises import engine\n"
        "assert 'DT' in engine.chapter_names('attncourse.exercises.ch07')"
    )
    assert imported_after(code, ["nbformat", "jsonschema"]) == []
