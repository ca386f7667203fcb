"""``attncourse present NN``: chapter NN as reveal.js slides with live widgets, served by Voilà.

Voilà's own ``reveal`` template does the work: it runs the instructor notebook in a fresh kernel,
turns each cell into a slide, sub-slide, fragment or nothing by its ``slideshow.slide_type``
metadata (``scripts/slides.py`` writes it), hides the code, and keeps the kernel alive so the
widgets answer. The course's template ``attncourse-reveal`` (in ``slides/``, found through
``JUPYTER_PATH``) extends it and makes it work offline and in a lecture room:

- the template asks a CDN for reveal.js's style sheets, so ``slides/`` ships them (reveal.js
  6.0.1's ``reveal.css`` and ``white`` theme, the version of the reveal.js that Voilà bundles,
  fonts inlined); the unused jQuery it also asks a CDN for is replaced by an empty script; and
  its two Font Awesome links to a CDN are dropped, since Voilà's own bundle already carries that
  style sheet and its fonts (served from Voilà's static folder);
- with a widget's control focused, the arrow keys move the control, not the slides;
- the slides are 1280 x 720 (16:9, scaled to the screen), and a slide taller than that shrinks
  its text to fit.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ..i18n import edition
from .notebooks import DEFAULT_SOURCE, UsageError, chapter_notebook, read_notebook

ASSETS = Path(__file__).resolve().parent / "slides"  # a JUPYTER_PATH entry
DEFAULT_PORT = 8866  # Voilà's own default


def has_slides(notebook: Path) -> bool:
    """Whether any cell of ``notebook`` has a slide type (``scripts/slides.py`` gives them)."""
    cells = read_notebook(Path(notebook)).cells
    return any(c.get("metadata", {}).get("slideshow", {}).get("slide_type") for c in cells)


def free_port(start: int = DEFAULT_PORT, tries: int = 50) -> int:
    """The first port from ``start`` on that nothing listens on (on localhost)."""
    for port in range(start, start + tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise UsageError(f"no free port in {start}-{start + tries - 1}: give one with --port")


def voila_command(notebook: Path, port: int, *, open_browser: bool = True):
    """(environment additions, argv) of the Voilà server that presents ``notebook``.

    ``slides/voila.json`` holds the settings (offline style sheets, localhost only, tracebacks
    shown); ``JUPYTER_PATH`` lets Voilà find the style sheets under ``slides/voila/templates/``.
    """
    paths = [str(ASSETS), *filter(None, os.environ.get("JUPYTER_PATH", "").split(os.pathsep))]
    env = {"JUPYTER_PATH": os.pathsep.join(paths)}
    argv = [
        sys.executable,
        "-m",
        "attncourse.classroom.serve",  # Voilà, started quicker
        "voila",
        str(Path(notebook).resolve()),
        "--template=attncourse-reveal",
        f"--port={port}",
        f"--Voila.config_file_paths={ASSETS}",
    ]
    if not open_browser:
        argv.append("--no-browser")
    return env, argv


def _wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.2)
    return False


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def present(
    chapter: str,
    *,
    source: Path = DEFAULT_SOURCE,
    port: int | None = None,
    open_browser: bool = True,
    dry_run: bool = False,
    lang: str = "en",
    echo=print,
) -> int:
    """Serve chapter ``chapter`` as slides until Ctrl-C; with ``dry_run`` print the command.
    ``lang``: the edition to show (``attncourse.i18n``)."""
    with edition(source, lang, echo=echo) as notebooks:
        return _present(
            chapter_notebook(chapter, notebooks), port, open_browser, dry_run, lang, echo
        )


def _present(notebook: Path, port, open_browser: bool, dry_run: bool, lang: str, echo) -> int:
    port = free_port() if port is None else port
    env, argv = voila_command(notebook, port, open_browser=open_browser)
    if lang != "en":  # the checks' language (English unless told)
        env["ATTNCOURSE_LANG"] = lang
    if dry_run:
        echo(shlex.join([f"{k}={v}" for k, v in env.items()] + argv))
        return 0
    url = f"http://localhost:{port}/"
    echo(f"attncourse present: {notebook.stem}: starting Voilà on {url}", flush=True)
    if not has_slides(notebook):
        echo(
            f"attncourse present: {notebook.name} has no slide metadata yet, so it shows as one "
            "long slide (python scripts/slides.py gives it slides)",
            flush=True,
        )
    process = subprocess.Popen(argv, env={**os.environ, **env})
    signal.signal(signal.SIGTERM, _interrupt)  # stopped by another process: stop Voilà too
    try:
        if _wait_for_port(port, process):
            echo(
                f"attncourse present: slides at {url}\n"
                "  Voilà runs the whole chapter in a fresh kernel before the first slide shows\n"
                "  (10 s to a minute; the page shows a spinner meanwhile), and again on every\n"
                "  reload. Keys: Space next slide, → ← sections, ↓ ↑ within a section, Esc\n"
                "  overview, F full screen. Stop with Ctrl-C.",
                flush=True,
            )
        return process.wait()
    except KeyboardInterrupt:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        return 0
