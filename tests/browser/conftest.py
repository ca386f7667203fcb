"""Browser tests: Playwright drives the system Chromium through the course as a learner and a
lecturer see it (JupyterLab on a fresh workspace, ``attncourse present``).

They skip, saying why, when Playwright or Chromium is missing, except in CI (``CI=true``), where
that is a failure. Chromium is looked for at ``$ATTNCOURSE_CHROMIUM``, ``/usr/bin/chromium`` and
on the PATH (Debian/Ubuntu: ``apt-get install chromium``); Playwright's own browser downloads are
not used. Every page may reach only this machine: a request elsewhere is refused and recorded.

The widget latencies measured (key press → new image on screen) are written to
``<pytest's tmp dir>/browser-latencies.json`` and summed up at the end of the run.
"""

import contextlib
import json
import sys

import pytest
from browser_helpers import (
    CHROMIUM_ARGS,
    IN_CI,
    LOCAL,
    RESULTS,
    chromium_path,
    free_port,
    start_server,
    stop_server,
)


def _unavailable(reason: str):
    if IN_CI:
        pytest.fail(f"{reason}; CI=true, so the browser tests must run", pytrace=False)
    pytest.skip(f"browser tests skipped: {reason}")


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable('Playwright is not installed (pip install -e ".[test]")')
    executable = chromium_path()
    if executable is None:
        _unavailable(
            "no Chromium found at $ATTNCOURSE_CHROMIUM, /usr/bin/chromium or on the PATH "
            "(Debian/Ubuntu: apt-get install chromium)"
        )
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def local_page(browser):
    """(context, page): a page that can reach only this machine; ``page.external`` lists what it
    tried to reach elsewhere, ``page.errors`` the page's script errors."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.external, page.errors = [], []

    def route(request_route):
        url = request_route.request.url
        if url.startswith(LOCAL):
            request_route.continue_()
        else:
            page.external.append(url)
            request_route.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    return context, page


@pytest.fixture
def page(browser):
    """A fresh page of its own for one test."""
    context, page = local_page(browser)
    yield page
    context.close()


@pytest.fixture(scope="session")
def lab(browser, tmp_path_factory):
    """JupyterLab on a fresh workspace, started as a learner starts it (``attncourse start``):
    (base URL, token, workspace).
    """
    folder = tmp_path_factory.mktemp("lab")
    workspace, port, token = folder / "workspace", free_port(), "attncourse-browser-tests"
    argv = [
        sys.executable,
        "-m",
        "attncourse",
        "start",
        "--workspace",
        str(workspace),
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        # the rest goes to jupyter lab: a known token, this folder's settings and workspaces (not
        # the user's), the app object visible to the tests. Nothing answers JupyterLab's pop-ups
        # in advance: a learner's JupyterLab must show none.
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--LabApp.expose_app_in_browser=True",
        f"--LabApp.user_settings_dir={folder / 'settings'}",
        f"--LabApp.workspaces_dir={folder / 'workspaces'}",
    ]
    base = f"http://127.0.0.1:{port}"
    process = start_server(argv, folder / "lab.log", f"{base}/api/status?token={token}", 180)
    yield base, token, workspace
    stop_server(process)


@pytest.fixture(scope="session")
def lab_page(browser, lab):
    """One page with JupyterLab loaded at the address ``attncourse start`` opens (as the learner
    keeps it open): the chapters are opened in it one after the other. (base URL, token,
    workspace, page)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    base, token, workspace = lab
    context, page = local_page(browser)
    page.goto(f"{base}/?token={token}")
    page.wait_for_function(
        "() => Boolean(window.jupyterapp) && jupyterapp.commands.hasCommand('docmanager:open')",
        timeout=120_000,
    )
    page.evaluate("async () => { await jupyterapp.started; await jupyterapp.restored; }")
    # the first chapter, which ``attncourse start`` opens, opens a moment after JupyterLab is
    # restored: wait for it, or it takes the focus from a chapter a test has just opened (the
    # landing test checks that it opens)
    first = sorted(workspace.glob("[0-9][0-9]_*.ipynb"))[0].name
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(
            "(path) => { const panel = jupyterapp.shell.currentWidget;"
            " return Boolean(panel && panel.context && panel.context.path === path); }",
            arg=first,
            timeout=60_000,
        )
    yield base, token, workspace, page
    context.close()


def pytest_sessionfinish(session):
    if RESULTS and hasattr(session.config, "_tmp_path_factory"):
        path = session.config._tmp_path_factory.getbasetemp() / "browser-latencies.json"
        path.write_text(json.dumps(RESULTS, indent=1))
        session.config._attncourse_latencies = path


def pytest_terminal_summary(terminalreporter, config):
    if not RESULTS:
        return
    terminalreporter.section("widget latency, key press or click -> new image on screen (ms)")
    for r in RESULTS:
        extra = "  ".join(f"{k} {r[k]} s" for k in r if k.endswith("_s"))
        terminalreporter.write_line(
            f"{r['name']:40s} median {r['median_ms']:6.1f}  p95 {r['p95_ms']:6.1f}  {extra}"
        )
    path = getattr(config, "_attncourse_latencies", None)
    if path:
        terminalreporter.write_line(f"written to {path}")
