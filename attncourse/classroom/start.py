"""``attncourse start``: make the learner's workspace and open it in JupyterLab.

The workspace is a student copy of every chapter (``student.student_bytes``: no nbgrader needed),
made once; later starts refresh only notebooks the learner has not changed. JupyterLab then opens
on it as a learner needs it:

- on a first start it lands in the first chapter (``00_how_to_use.ipynb``); later starts restore
  the learner's own layout;
- no "Jupyter news?" pop-up and no update check (JupyterLab's announcements plugin is off);
- the tab's icon does not turn busy (the status bar shows when the kernel is busy): it changed on
  every busy and idle, twice per widget update. Without it, in the browser tests on 2 cores, a
  widget's image follows a key press in a median of 63-94 ms a chapter (two runs), against
  69-149 ms with it (three runs);
- the kernel's execution indicator is in the status bar, not in the notebook's toolbar
  (``settings/overrides.json``): there, each of its changes, a busy and an idle per widget update,
  made the toolbar work out its keyboard order again and lay the page out. Chapter 01's widget on
  2 cores (one cell, 40 key presses, four runs each way, interleaved): the browser spends about
  140 ms of CPU per update instead of 155, and the image follows a key press in a median of
  62-70 ms instead of 70-78. In the browser tests, run each way on one day, every chapter's median
  was lower with it, by 0.2-15 ms (3 ms in the middle);
- the kernel's messages leave the server at once (``lab/course/jupyter_server_config.json``,
  ``nodelay``): with the operating system's default, the messages of a widget update after "busy"
  waited about 40 ms for the browser's acknowledgement on most key presses. In the browser tests
  on 2 cores, on one day, chapters 01-10 had medians of 55-64 ms before (one run), 28-60 ms after
  (three runs);
- without nbgrader's extensions (its menu, Create Assignment panel, Formgrader and Validate
  button are for instructors) and without Voila's "Render with Voila" button and server extension
  (where the ``lecture`` extra is installed: lecturers present with ``attncourse present``),
  unless ``--instructor`` is given;
- as root (a container, a cloud machine) with ``--allow-root`` and a note, instead of JupyterLab
  refusing to start.

The settings come from ``lab/`` beside this module, put first on ``JUPYTER_CONFIG_PATH`` for this
JupyterLab only: ``lab/course`` (every start) and ``lab/learner`` (without ``--instructor``);
``lab/course/settings`` is this JupyterLab's app settings folder (in place of the environment's
own, which a pip install does not make), whose ``overrides.json`` changes the default of a
setting. Nothing in the learner's own Jupyter settings is changed: a setting the learner chose
still wins.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from ..i18n import edition
from .notebooks import NOTEBOOK_GLOB, UsageError
from .release import release

LAB = Path(__file__).resolve().parent / "lab"
SETTINGS = LAB / "course" / "settings"  # JupyterLab's app settings: defaults over its own


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def lab_command(
    workspace: Path,
    *,
    landing: str | None = None,
    instructor: bool = False,
    no_browser: bool = False,
    port: int | None = None,
    ip: str | None = None,
    root: bool = False,
    extra=(),
) -> tuple[dict, list[str]]:
    """(environment additions, argv) of the JupyterLab that opens ``workspace``; ``landing``: a
    notebook of the workspace to open first."""
    folders = [LAB / "course"] if instructor else [LAB / "learner", LAB / "course"]
    paths = [
        *map(str, folders),
        *filter(None, os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep)),
    ]
    env = {"JUPYTER_CONFIG_PATH": os.pathsep.join(paths)}
    # this interpreter's JupyterLab, whatever the PATH holds, started quicker (classroom.serve)
    argv = [sys.executable, "-m", "attncourse.classroom.serve", "jupyterlab"]
    argv.append(f"--ServerApp.root_dir={Path(workspace).resolve()}")
    argv.append(f"--LabApp.app_settings_dir={SETTINGS}")
    if landing:
        argv.append(f"--LabApp.default_url=/lab/tree/{landing}")
    if root and "--allow-root" not in extra:
        argv.append("--allow-root")
    if no_browser:
        argv.append("--no-browser")
    if port is not None:
        argv.append(f"--port={port}")
    if ip is not None:
        argv.append(f"--ip={ip}")
    return env, [*argv, *extra]


def _summary(workspace: Path, results) -> str:
    done = {}
    for r in results:
        done.setdefault(r.status, []).append(r.name)
    counts = {status: len(names) for status, names in done.items()}
    parts = []
    for status, words in (
        ("written", "new"),
        ("refreshed", "refreshed"),
        ("overwritten", "overwritten"),
        ("up to date", "up to date"),
    ):
        if counts.get(status):
            parts.append(f"{counts[status]} {words}")
    chapters = f"{len(results)} chapter" + ("" if len(results) == 1 else "s")
    line = f"workspace {workspace}: {chapters} ({', '.join(parts) or 'none'})"
    if done.get("kept"):
        line += (
            f"; kept as you changed them: {', '.join(done['kept'])} "
            "(`attncourse release --force --out DIR` replaces them, keeping a backup)"
        )
    return line


def start(
    workspace: Path,
    *,
    source: Path,
    dry_run: bool = False,
    instructor: bool = False,
    no_browser: bool = False,
    port: int | None = None,
    ip: str | None = None,
    extra=(),
    lang: str = "en",
    echo=print,
) -> int:
    """Make or refresh ``workspace`` and run JupyterLab on it (``dry_run``: say what would be
    done and print the command, writing nothing). Returns only for a dry run.

    ``lang``: the edition of the notebooks (``attncourse.i18n``); the checks then speak it too
    (``ATTNCOURSE_LANG`` in JupyterLab's environment). Untouched notebooks of another edition are
    replaced; those the learner changed are kept."""
    workspace = Path(workspace)
    if workspace.exists() and not workspace.is_dir():
        raise UsageError(f"--workspace {workspace}: exists and is not a folder")
    with edition(source, lang, echo=echo) as notebooks:
        results = release(
            [], workspace, source=notebooks, nbgrader=False, dry_run=dry_run, echo=lambda _: None
        )
    new = [r.name for r in results if r.status == "written"]
    chapters = sorted(r.name for r in results)
    first = next((n for n in chapters if Path(n).match(NOTEBOOK_GLOB)), None)
    landing = first if first in new else None
    echo(("would make or update " if dry_run else "") + _summary(workspace, results))
    root = is_root()
    env, argv = lab_command(
        workspace,
        landing=landing,
        instructor=instructor,
        no_browser=no_browser,
        port=port,
        ip=ip,
        root=root,
        extra=extra,
    )
    if lang != "en":  # the checks' language (English unless told)
        env["ATTNCOURSE_LANG"] = lang
    if root:
        echo("attncourse start: running as root, so JupyterLab starts with --allow-root")
    if dry_run:
        echo(shlex.join([f"{k}={v}" for k, v in env.items()] + argv))
        return 0
    where = f", in {landing}" if landing else ""
    echo(f"opening JupyterLab on {workspace}{where} (stop it with Ctrl-C)")
    sys.stdout.flush()
    os.execve(argv[0], argv, {**os.environ, **env})
    return 0  # not reached
