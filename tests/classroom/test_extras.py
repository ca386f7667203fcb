"""A learner's install is light: `start` needs none of the extras, and a command whose extra is
missing says which one to install instead of failing on an import."""

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
