"""Install files agree with each other, and CI runs the README's test command."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = project["dependencies"] + [
        r for extra in project["optional-dependencies"].values() for r in extra
    ]
    return sorted(reqs)


def test_every_dependency_is_pinned_and_torch_is_2_13_0():
    pins = pyproject_pins()
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][0-9a-z.]*", p) for p in pins), pins
    assert "torch==2.13.0" in pins


def test_environment_yml_pins_the_same_versions_as_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "conda-forge" in env["channels"]
    assert "python=3.11" in env["dependencies"]
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert sorted(pip_section) == pyproject_pins()


def readme_test_command():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- test-command -->", 1)[1]
    return re.search(r"```\w*\n(.*?)\n```", block, re.S).group(1)


def test_ci_extracts_the_readme_test_command():
    command = readme_test_command()
    assert "pip install" in command and '".[test]"' in command and "pytest" in command
    awk = re.search(r"cmd=\$\(awk '(.*?)' README.md\)", (ROOT / ".ci/run").read_text(), re.S).group(
        1
    )
    extracted = subprocess.run(
        ["awk", awk, "README.md"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert extracted.strip() == command.strip()


def test_pytest_runs_notebooks_with_nbval_lax():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--nbval-lax" in options["addopts"] and "notebooks" in options["testpaths"]


LINTED = [
    "attncourse",
    "tests",
    "benchmarks",
    "scripts",
    "setup.py",
    *sorted(map(str, ROOT.glob("notebooks/*.py"))),
]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_is_clean(command):
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *LINTED], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, f"ruff {' '.join(command)}:\n{result.stdout}{result.stderr}"
