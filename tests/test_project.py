"""Install files agree with each other, and CI runs the README's test command."""

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0)).lower()


def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirements() -> list[str]:
    """Every dependency of the package: its base and every extra (less the self-reference)."""
    groups = [project()["dependencies"], *project()["optional-dependencies"].values()]
    return [r for group in groups for r in group if _name(r) != "attncourse"]


def _tested_pins() -> dict[str, str]:
    """constraints.txt: {normalised name: the exact version tested}."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([0-9][0-9a-z.]*)", line.strip())
            assert match, f"constraints.txt: not an exact pin: {line!r}"
            pins[_name(match.group(1))] = match.group(2)
    return pins


def test_dependencies_are_ranges_from_the_tested_version_to_the_next_major():
    pins = _tested_pins()
    for requirement in requirements():
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)>=([0-9][0-9a-z.]*),<([0-9][0-9.]*)", requirement)
        assert match, f"{requirement}: give a range >=TESTED,<NEXT"
        name, low, high = match.groups()
        assert pins.get(_name(name)) == low, (
            f"{requirement}: constraints.txt tests {pins.get(_name(name))}"
        )
        major = low.split(".")
        expected = f"{int(major[0]) + 1}" if major[0] != "0" else f"0.{int(major[1]) + 1}"
        assert high == expected, f"{requirement}: the upper end should be <{expected}"
    assert pins["torch"] == "2.13.0"  # the CPU wheel on this machine; never a CUDA build


def test_the_base_install_is_what_a_learner_needs():
    base = {_name(r) for r in project()["dependencies"]}
    assert {"torch", "numpy", "matplotlib", "ipywidgets", "jupyterlab", "tqdm"} <= base
    assert not base & {"nbgrader", "voila", "sphinx", "myst-nb", "jupyterlab-slideshow"}
    extras = project()["optional-dependencies"]
    assert {_name(r) for r in extras["classroom"]} == {"nbgrader"}
    assert "voila" in {_name(r) for r in extras["lecture"]}
    assert "sphinx" in {_name(r) for r in extras["site"]}
    assert "attncourse[lecture,site,classroom,hub]" in extras["test"]  # tests cover every part


def test_constraints_hold_every_dependency_and_not_the_project():
    pins = _tested_pins()
    assert {_name(r) for r in requirements()} <= set(pins)
    assert "attncourse" not in pins


def test_environment_yml_pins_the_tested_versions_of_the_same_dependencies():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "conda-forge" in env["channels"]
    assert "python=3.11" in env["dependencies"]
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    pins = _tested_pins()
    expected = sorted(f"{_name(r)}=={pins[_name(r)]}" for r in requirements())
    got = sorted(f"{_name(p.split('==')[0])}=={p.split('==')[1]}" for p in pip_section)
    assert got == expected


def readme_test_command():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- test-command -->", 1)[1]
    return re.search(r"```\w*\n(.*?)\n```", block, re.S).group(1)


def test_ci_extracts_the_readme_test_command():
    command = readme_test_command()
    assert "pip install -c constraints.txt" in command and '".[test]"' in command
    assert re.search(r"pytest -n \d+ --dist loadscope", command)
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
    "deploy",
    "setup.py",
    *sorted(map(str, ROOT.glob("notebooks/*.py"))),
]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_is_clean(command):
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *LINTED], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, f"ruff {' '.join(command)}:\n{result.stdout}{result.stderr}"


def test_the_files_run_first_are_there():
    """conftest.py's LONGEST_FIRST names files that exist: a renamed one would lose its place."""
    tree = ast.parse((ROOT / "conftest.py").read_text())
    longest = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and node.targets[0].id == "LONGEST_FIRST"
    )
    missing = [path for path in longest if not (ROOT / path).is_file()]
    assert longest and not missing, f"LONGEST_FIRST names files that are not there: {missing}"
