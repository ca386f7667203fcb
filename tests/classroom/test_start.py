"""`attncourse start` as a learner meets it: a workspace made without nbgrader (the same bytes as
nbgrader's release), a dry run that writes nothing, JupyterLab's options in its help, root, the
first chapter on a first start, and a JupyterLab without nbgrader's extensions or news pop-up.
"""

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from classroom_helpers import ALL, FIXTURE, FIXTURES, cli, read

from attncourse.classroom import start as start_module
from attncourse.classroom.course import Course
from attncourse.classroom.release import MANIFEST
from attncourse.classroom.student import student_bytes

LAB = start_module.LAB
SETTINGS = start_module.SETTINGS


@pytest.mark.parametrize("notebook", ALL, ids=lambda p: p.stem)
def test_the_student_copy_made_without_nbgrader_is_nbgrader_s_byte_for_byte(notebook, released):
    assert student_bytes(notebook) == released[notebook.name].read_bytes()


def test_the_student_copy_follows_nbgrader_on_every_kind_of_cell(tmp_path):
    """Cells the chapters do not have (yet): a markdown answer, an indented solution region, a
    mark scheme, a read-only cell, output settings, a cell toolbar: nbgrader's own output."""
    nb = read(FIXTURE)
    nb.metadata["celltoolbar"] = "Create Assignment"

    def graded(source, kind="code", **meta):
        cell = (nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell)(
            source
        )
        cell.metadata["nbgrader"] = {
            "grade": False,
            "locked": False,
            "schema_version": 3,
            "solution": False,
            "task": False,
            **meta,
        }
        return cell

    nb.cells += [
        graded(
            "Explain.\n\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION",
            "markdown",
            grade_id="why",
            solution=True,
            grade=True,
            points=1,
        ),  # fmt: skip
        graded(
            "Say it in one word.", "markdown", grade_id="word", solution=True, grade=True, points=1
        ),  # fmt: skip
        graded(
            "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n",
            grade_id="indented",
            solution=True,
        ),  # fmt: skip
        graded(
            "Describe the plot.\n=== BEGIN MARK SCHEME ===\nA line.\n=== END MARK SCHEME ===",
            "markdown",
            grade_id="task",
            task=True,
            points=2,
        ),  # fmt: skip
        graded("CONSTANT = 3", grade_id="read_only", locked=True),
    ]
    nb.cells[8].metadata.update(collapsed=True, scrolled=True)
    source = tmp_path / "source"
    source.mkdir()
    path = source / "98_kinds.ipynb"
    nbformat.write(nb, path)
    course = Course(tmp_path / "course")
    course.add_source(path)
    expected = course.generate(path).read_bytes()
    assert student_bytes(path) == expected
    text = expected.decode()
    assert "Because." not in text and "A line." not in text and "YOUR ANSWER HERE" in text


def _workspace_lines(out: str) -> list[str]:
    return out.strip().splitlines()


def test_a_dry_run_writes_nothing_and_prints_the_command(tmp_path, monkeypatch):
    monkeypatch.setattr(start_module, "is_root", lambda: False)
    workspace = tmp_path / "ws"
    status, out, _ = cli("start", "--workspace", workspace, "--source", FIXTURES, "--dry-run")
    assert status == 0 and not workspace.exists()
    assert "would make or update workspace" in out and "1 new" in out
    command = _workspace_lines(out)[-1]
    assert re.fullmatch(
        rf"JUPYTER_CONFIG_PATH={LAB / 'learner'}:{LAB / 'course'}\S* \S*python\S* "
        rf"-m attncourse.classroom.serve jupyterlab "
        rf"--ServerApp.root_dir=\S*ws --LabApp.app_settings_dir={SETTINGS} "
        rf"--LabApp.default_url=/lab/tree/{FIXTURE.name}",
        command,
    ), command
    assert "--allow-root" not in command


def _start(monkeypatch, *args):
    """``attncourse start ARGS`` with JupyterLab's launch caught: (status, stdout, argv, env)."""
    launched = {}

    def execve(path, argv, env):
        launched.update(argv=argv, env=env)

    monkeypatch.setattr(start_module.os, "execve", execve)
    status, out, err = cli("start", *args)
    assert status == 0, err
    return out, launched["argv"], launched["env"]


def test_start_makes_the_workspace_once_lands_in_its_first_chapter_then_keeps_the_layout(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(start_module, "is_root", lambda: False)
    workspace = tmp_path / "ws"
    out, argv, env = _start(monkeypatch, "--workspace", workspace, "--source", FIXTURES)
    assert (workspace / FIXTURE.name).read_bytes() == student_bytes(FIXTURE)
    assert argv[:4] == [sys.executable, "-m", "attncourse.classroom.serve", "jupyterlab"]
    assert f"--LabApp.default_url=/lab/tree/{FIXTURE.name}" in argv
    assert f"in {FIXTURE.name}" in out
    assert env["JUPYTER_CONFIG_PATH"].split(":")[:2] == [str(LAB / "learner"), str(LAB / "course")]
    assert json.loads((workspace / MANIFEST).read_text())[FIXTURE.name]

    mine = read(workspace / FIXTURE.name)  # the learner writes in it; the next start keeps it
    mine.cells[3].source = "# my notes\n" + mine.cells[3].source
    nbformat.write(mine, workspace / FIXTURE.name)
    out, argv, _ = _start(monkeypatch, "--workspace", workspace, "--source", FIXTURES)
    assert "# my notes" in (workspace / FIXTURE.name).read_text()
    assert f"kept as you changed them: {FIXTURE.name}" in out
    assert not any(a.startswith("--LabApp.default_url") for a in argv)  # their own layout


def test_start_passes_jupyterlab_s_options_and_allows_root_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(start_module, "is_root", lambda: True)
    workspace = tmp_path / "ws"
    out, argv, env = _start(
        monkeypatch,
        "--workspace",
        workspace,
        "--source",
        FIXTURES,
        "--no-browser",
        "--port",
        "8123",
        "--ip",
        "0.0.0.0",
        "--instructor",
        "--ServerApp.token=secret",
    )
    assert argv[-5:] == [
        "--allow-root",
        "--no-browser",
        "--port=8123",
        "--ip=0.0.0.0",
        "--ServerApp.token=secret",
    ]
    notes = [line for line in out.splitlines() if "as root" in line]
    assert notes == ["attncourse start: running as root, so JupyterLab starts with --allow-root"]
    assert str(LAB / "learner") not in env["JUPYTER_CONFIG_PATH"]  # an instructor keeps nbgrader
    assert env["JUPYTER_CONFIG_PATH"].split(":")[0] == str(LAB / "course")
    _, argv, _ = _start(monkeypatch, "--workspace", workspace, "--source", FIXTURES, "--allow-root")
    assert argv.count("--allow-root") == 1


def test_start_help_lists_jupyterlab_s_options():
    status, out, _ = cli("start", "--help")
    assert status == 0
    for option in ("--no-browser", "--port N", "--ip ADDRESS", "--instructor", "--dry-run"):
        assert option in out, option
    assert "--allow-root" in out


def test_the_learner_settings_switch_off_nbgrader_voila_s_preview_and_the_news():
    """A learner grades nothing and presents nothing: nbgrader's extensions and Voila's "Render
    with Voila" button (and its server extension, which JupyterLab would import at every start)
    are off."""
    course = json.loads((LAB / "course" / "labconfig" / "page_config.json").read_text())
    assert course["disabledExtensions"] == {
        "@jupyterlab/apputils-extension:announcements": True,
        # the tab's busy icon (the status bar and the toolbar say when the kernel is busy): it
        # changes the page's icon on every busy and idle, twice per widget update
        "@jupyterlab/application-extension:faviconbusy": True,
    }
    learner = json.loads((LAB / "learner" / "labconfig" / "page_config.json").read_text())
    assert learner["disabledExtensions"] == {
        "@jupyter/nbgrader": True,
        "@voila-dashboards/jupyterlab-preview": True,
    }
    server = json.loads((LAB / "learner" / "jupyter_server_config.json").read_text())
    off = server["ServerApp"]["jpserver_extensions"]
    for package in ("nbgrader", "voila"):
        installed = Path(sys.prefix, f"etc/jupyter/jupyter_server_config.d/{package}.json")
        if installed.is_file():  # every server extension the package turns on is turned off again
            on = json.loads(installed.read_text())["ServerApp"]["jpserver_extensions"]
            assert {name for name, enabled in on.items() if enabled} <= set(off), package
    assert "voila.server_extension" in off and not any(off.values())


def test_the_course_s_jupyterlab_defaults_are_settings_jupyterlab_knows():
    """``lab/course/settings/overrides.json``: the kernel's execution indicator in the status bar,
    a setting of JupyterLab's own schema (a misspelt name would be silently ignored)."""
    import jsonschema
    from jupyterlab.commands import get_app_dir
    from jupyterlab_server.settings_utils import _get_overrides

    overrides, error = _get_overrides(str(SETTINGS))
    assert not error, error
    assert overrides == {
        "@jupyterlab/notebook-extension:tracker": {"kernelStatus": {"showOnStatusBar": True}}
    }
    for plugin, values in overrides.items():
        package, name = plugin.split(":")
        schema = json.loads(Path(get_app_dir(), "schemas", package, f"{name}.json").read_text())
        for key, value in values.items():
            assert key in schema["properties"], (plugin, key)
            jsonschema.validate({key: value}, {**schema, "required": []})
