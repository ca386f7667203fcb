"""Every chapter in JupyterLab, as a learner opens it: a fresh workspace made by ``attncourse
start``, the chapter's code cells run up to its widget (its exercises left blank, their check cells
not run: the chapter runs with blank answers), then the widget moved with the keyboard; its image
must change each time. Chapters run two at a time (01 beside 02, 03 beside 04, ...), each in its
own kernel and tab; a widget is timed only once both have run. The latencies, key press to new
image, are printed and written to a JSON file; their median is held under ``LATENCY_BUDGET_MS``, a
bound against regressions.
"""

import asyncio
import concurrent.futures
import importlib.util
import json
import re
import time
import urllib.request
from urllib.parse import urlsplit

import nbformat
import pytest
from browser_helpers import (
    CHAPTERS,
    CUT_LABELS,
    LATENCY_BUDGET_MS,
    LINUX,
    ROOT,
    measure_slider,
    record,
    server_side_nodelay,
)

from attncourse.classroom.notebooks import is_graded

_spec = importlib.util.spec_from_file_location("slides", ROOT / "scripts" / "slides.py")
slides = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(slides)

RUN_TIMEOUT_MS = 240_000  # a chapter runs in at most 60 s on 2 quiet cores: room for a busy machine


def cells_to_run(nb, widget: int) -> list[int]:
    """The code cells up to and including the widget's, less the graded check cells."""
    return [
        index
        for index, cell in enumerate(nb.cells[: widget + 1])
        if cell.cell_type == "code" and not is_graded(cell)
    ]


def widget_cell(instructor) -> int:
    """Index of the chapter's widget: the first cell whose stored result is a widget."""
    for index, cell in enumerate(instructor.cells):
        if cell.cell_type == "code" and slides.shows_widget(cell):
            return index
    raise AssertionError("the instructor notebook stores no widget output: execute it")


PANEL = "jupyterapp.shell.currentWidget"
# the open notebook whose path is ``path``
PANEL_OF = (
    "Array.from(jupyterapp.shell.widgets('main')).find(w => w.context && w.context.path === path)"
)

OPEN = """async (path) => {
  await jupyterapp.restored;
  await jupyterapp.commands.execute("docmanager:open", {path});
}"""

# the notebook ``path`` is open, its kernel started and idle
KERNEL_READY = f"""(path) => {{
  const panel = {PANEL_OF};
  const kernel = panel && panel.sessionContext && panel.sessionContext.session
    && panel.sessionContext.session.kernel;
  return Boolean(kernel) && kernel.status === 'idle' && panel.content.widgets.length > 0;
}}"""

# make notebook ``path`` the current tab
ACTIVATE = f"""(path) => jupyterapp.shell.activateById({PANEL_OF}.id)"""

# shut the kernel of notebook ``path`` down (the cores go to the next chapter) and close its tab
# unsaved; nothing if it is not open. The server's answer, once the kernel has exited (about 1 s),
# is not waited for: the next chapter opens and runs meanwhile, and is timed once it has exited
CLOSE = """(path) => {
  for (const panel of Array.from(jupyterapp.shell.widgets('main'))) {
    if (!panel.context || panel.context.path !== path) continue;
    const session = panel.sessionContext.session;
    if (session) session.shutdown();  // its request leaves at once
    panel.context.model.dirty = false;
    panel.dispose();
  }
}"""

# start running the cells ``indices`` of notebook ``path`` as Run All does: every request is sent
# at once and the kernel runs them in turn (sending each only after the last one's reply cost
# seconds a chapter); after a cell that raises, the kernel skips the rest, as in Run All. Not
# waited for here: RAN_IN_TIME waits
RUN_CELLS = f"""([path, indices]) => {{
  const panel = {PANEL_OF}, cells = panel.content.widgets;
  const CodeCell = cells[indices[0]].constructor;
  window.attncourseRuns = window.attncourseRuns || {{}};
  window.attncourseRuns[path] = Promise.all(
    indices.map(i => CodeCell.execute(cells[i], panel.sessionContext)));
}}"""

# whether the cells RUN_CELLS sent to notebook ``path`` were all answered within ``timeout`` ms
RAN_IN_TIME = """async ([path, timeout]) => {
  const late = new Promise(resolve => setTimeout(resolve, timeout, false));
  const done = window.attncourseRuns[path].then(() => true, () => true);  // ERRORS_IN says what
  return await Promise.race([done, late]);
}"""

# every cell of ``indices`` of notebook ``path`` has run and its kernel is idle again
RAN_CELLS = f"""([path, indices]) => {{
  const panel = {PANEL_OF};
  for (const index of indices)
    if (panel.content.widgets[index].model.executionCount === null) return false;
  return panel.sessionContext.session.kernel.status === 'idle';
}}"""

ERRORS_IN = f"""([path, indices]) => {{
  const panel = {PANEL_OF}, errors = [];
  for (const index of indices) {{
    const cell = panel.content.widgets[index].model;
    for (let j = 0; j < cell.outputs.length; j++) {{
      const out = cell.outputs.get(j).toJSON();
      if (out.output_type === 'error')
        errors.push(`cell ${{index + 1}}: ${{out.ename}}: ${{out.evalue}}`);
    }}
  }}
  return errors;
}}"""

MARK_CELL = f"""async (index) => {{
  const notebook = {PANEL}.content;
  notebook.activeCellIndex = index;
  await notebook.scrollToItem(index, 'start');
  document.querySelectorAll('[data-attncourse-widget]').forEach(
    node => node.removeAttribute('data-attncourse-widget'));
  notebook.widgets[index].node.setAttribute('data-attncourse-widget', 'yes');
}}"""


# wait until the page's main thread is quiet: ten frames in a row, each within 25 ms of the last
# (cells scrolled into view for the first time are laid out and typeset then); frames waited
QUIET = """async () => {
  let quiet = 0, last = performance.now(), frames = 0;
  while (quiet < 10 && frames < 600) {
    await new Promise(resolve => requestAnimationFrame(resolve));
    const now = performance.now();
    quiet = now - last < 25 ? quiet + 1 : 0;
    last = now;
    frames++;
  }
  return frames;
}"""


def closing_kernels(base: str, token: str) -> list[str]:
    """The kernels the server still runs without a notebook: those of chapters just closed, whose
    sessions are gone while their processes exit (a notebook left open keeps its idle kernel)."""
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=60) as response:
        sessions = json.load(response)
    with urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=60) as response:
        kernels = {kernel["id"] for kernel in json.load(response)}
    return sorted(kernels - {s["kernel"]["id"] for s in sessions if s.get("kernel")})


# run a second of code in the current notebook's kernel; meanwhile, every href the page's icons
# take, and whether the kernel was seen busy
BUSY_ICONS = f"""async () => {{
  const kernel = {PANEL}.sessionContext.session.kernel;
  const hrefs = new Set(), seen = {{busy: false}};
  const look = () => {{
    document.querySelectorAll('link[rel~="icon"]').forEach(l => hrefs.add(l.href));
    if (kernel.status === 'busy') seen.busy = true;
  }};
  const timer = setInterval(look, 20);
  await kernel.requestExecute({{code: 'import time; time.sleep(1)'}}).done;
  clearInterval(timer);
  look();
  return {{hrefs: Array.from(hrefs), busy: seen.busy}};
}}"""


def test_a_learner_lands_in_chapter_00_with_no_pop_up_and_no_grading_tools(lab_page, tmp_path):
    """What ``attncourse start`` opens: the first chapter, no "Jupyter news?" notification, none
    of nbgrader's instructor interface (its menu, panels, Validate button) and no "Render with
    Voila" button; Run All in it goes on past its blank exercise."""
    _, _, workspace, page = lab_page
    first = sorted(workspace.glob("[0-9][0-9]_*.ipynb"))[0].name
    current = page.evaluate(f"() => {PANEL} && {PANEL}.context && {PANEL}.context.path")
    assert current == first, f"the current tab is {current}, not the first chapter {first}"
    quiet_until = time.monotonic() + 3  # JupyterLab's notifications come a moment after it starts
    menus = page.evaluate(
        "() => Array.from(document.querySelectorAll('.lm-MenuBar-itemLabel')).map(n => n.innerText)"
    )
    assert "File" in menus and not [m for m in menus if "grader" in m.lower()], menus
    plugins = page.evaluate("() => jupyterapp.listPlugins ? jupyterapp.listPlugins() : []")
    active = [p for p in plugins if page.evaluate("(id) => jupyterapp.isPluginActivated(id)", p)]
    assert not [p for p in active if "nbgrader" in p], "nbgrader's extensions are active"
    assert not [p for p in active if "voila" in p], "Voila's preview is active"
    assert "@jupyterlab/apputils-extension:announcements" not in active
    # the status bar says when the kernel is busy; the tab's icon, which changed on every busy and
    # idle of a widget update, does not
    assert "@jupyterlab/apputils-extension:kernel-status" in active
    page.wait_for_function(KERNEL_READY, arg=first, timeout=120_000, polling=200)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.screenshot(path=tmp_path / "landing-1280x720.png")  # what the learner sees first, ready
    page.set_viewport_size({"width": 1400, "height": 900})
    icons = page.evaluate(BUSY_ICONS)
    assert icons["busy"], "the kernel was never busy while the icons were watched"
    assert icons["hrefs"] and not [h for h in icons["hrefs"] if "busy" in h], icons
    toolbar = page.locator(".jp-NotebookPanel-toolbar").first.inner_text()
    assert "Validate" not in toolbar, toolbar
    # Run All, as the chapter advises: the check of its blank exercise shows its ✗, and the cells
    # after it run on (a check cell's raises-exception tag)
    cells = nbformat.read(workspace / first, as_version=4).cells
    code = [i for i, cell in enumerate(cells) if cell.cell_type == "code"]
    checks = [i for i in code if is_graded(cells[i])]
    assert checks and checks[-1] < code[-1], "chapter 00 has a code cell after a check cell"
    page.evaluate("() => jupyterapp.commands.execute('notebook:run-all-cells')")
    try:
        page.wait_for_function(RAN_CELLS, arg=[first, code], timeout=60_000, polling=250)
    except Exception:
        counts = page.evaluate(f"() => {PANEL}.content.widgets.map(w => w.model.executionCount)")
        raise AssertionError(f"Run All stopped: execution counts {counts}") from None
    errors = page.evaluate(ERRORS_IN, [first, code])
    assert [e.split(":")[0] for e in errors] == [f"cell {i + 1}" for i in checks], errors
    assert all("not implemented" in e for e in errors), errors
    # the kernel's execution indicator is in the status bar: in the notebook's toolbar, its every
    # change made the toolbar work out its keyboard order again (attncourse.classroom.start)
    places = page.evaluate(
        "() => Array.from(document.querySelectorAll('.jp-Notebook-ExecutionIndicator'))"
        ".map(n => n.closest('#jp-main-statusbar') ? 'status bar'"
        " : n.closest('.jp-Toolbar') ? 'toolbar' : 'elsewhere')"
    )
    assert places == ["status bar"], places
    page.wait_for_timeout(max(0.0, quiet_until - time.monotonic()) * 1000)
    notes = page.evaluate(
        "() => Array.from(document.querySelectorAll('.Toastify__toast, .jp-Notification-Toast'))"
        ".map(n => n.innerText)"
    )
    assert not notes, f"JupyterLab shows notifications: {notes}"


KERNEL_INFO = {
    "header": {"msg_id": "nodelay", "msg_type": "kernel_info_request", "session": "nodelay",
               "username": "", "version": "5.3", "date": ""},
    "parent_header": {}, "metadata": {}, "content": {}, "channel": "shell",
}  # fmt: skip


def _websocket_nodelay(base: str, path: str, kernel: bool) -> list[bool]:
    """Open a WebSocket to ``base`` + ``path`` (a kernel's: once the kernel has answered on it):
    ``server_side_nodelay`` of it, ``[True]`` if the server's end has Nagle's algorithm off."""
    from tornado.websocket import websocket_connect

    async def ask():
        connection = await websocket_connect(base.replace("http", "ws", 1) + path)
        try:
            if kernel:
                await connection.write_message(json.dumps(KERNEL_INFO))
                reply = ""
                while reply != "kernel_info_reply":
                    reply = json.loads(await connection.read_message())["msg_type"]
            client_port = connection.stream.socket.getsockname()[1]
            return server_side_nodelay(urlsplit(base).port, client_port)
        finally:
            connection.close()

    # a loop of its own, in a thread: Playwright's runs in this one
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, ask()).result(timeout=120)


@pytest.mark.skipif(not LINUX, reason="reads the server's sockets in Linux's /proc")
def test_a_kernel_s_messages_leave_the_server_at_once(lab):
    """The kernel's WebSocket, the one a widget's messages take, has Nagle's algorithm off
    (``attncourse.classroom.nodelay``): with it on, the messages after "busy" waited for the
    browser's delayed acknowledgement, about 40 ms. The server's other WebSocket, its event
    stream, keeps the system's default: the check reads the real setting."""
    base, token, _ = lab
    request = urllib.request.Request(f"{base}/api/kernels?token={token}", data=b"{}", method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        kernel = json.load(response)["id"]
    try:
        channels = f"/api/kernels/{kernel}/channels?token={token}"
        assert _websocket_nodelay(base, channels, kernel=True) == [True]
        events = f"/api/events/subscribe?token={token}"
        assert _websocket_nodelay(base, events, kernel=False) == [False]
    finally:
        stop = urllib.request.Request(f"{base}/api/kernels/{kernel}?token={token}", method="DELETE")
        urllib.request.urlopen(stop, timeout=60).close()


# chapters whose cells an earlier step has started: {chapter: (index of its widget cell, indices
# of the cells run, seconds its opening took)}. Two chapters run side by side, each in its own
# kernel (one chapter's cells keep two cores about two-thirds busy), and both have run before
# either widget is timed
STARTED: dict = {}


def start_chapter(page, chapter, workspace) -> None:
    """Open ``chapter`` from the workspace and start running its cells up to its widget, not
    waiting for them (``STARTED``)."""
    began = time.monotonic()
    widget = widget_cell(nbformat.read(chapter, as_version=4))
    run = cells_to_run(nbformat.read(workspace / chapter.name, as_version=4), widget)
    page.evaluate(OPEN, chapter.name)
    page.wait_for_function(KERNEL_READY, arg=chapter.name, timeout=120_000, polling=200)
    STARTED[chapter] = (widget, run, time.monotonic() - began)
    page.evaluate(RUN_CELLS, [chapter.name, run])


def partner_of(chapter, request):
    """The chapter that runs beside ``chapter``: the next one, when ``chapter`` is the first of
    a pair (01 with 02, 03 with 04, ...) and the next one's test is selected."""
    index = CHAPTERS.index(chapter)
    if index % 2 == 0 or index + 1 == len(CHAPTERS):
        return None
    following = CHAPTERS[index + 1]
    node = request.node.nodeid.replace(f"[{chapter.stem}]", f"[{following.stem}]")
    return following if node in {item.nodeid for item in request.session.items} else None


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_widget_answers_in_jupyterlab(lab_page, chapter, tmp_path, request):
    base, token, workspace, page = lab_page
    assert (workspace / chapter.name).is_file(), (
        f"attncourse start did not put {chapter.name} into the workspace"
    )

    start = time.monotonic()
    try:
        partner = None
        if chapter not in STARTED:
            start_chapter(page, chapter, workspace)
            partner = partner_of(chapter, request)
            if partner is not None:
                start_chapter(page, partner, workspace)
        widget, run, open_s = STARTED[chapter]
        opened = time.monotonic()
        answered = page.evaluate(RAN_IN_TIME, [chapter.name, RUN_TIMEOUT_MS])
        errors = page.evaluate(ERRORS_IN, [chapter.name, run])
        assert not errors, f"{chapter.name}: cells raised: {errors}"
        assert answered, f"{chapter.name}: its cells did not run in {RUN_TIMEOUT_MS / 1000:g} s"
        page.wait_for_function(RAN_CELLS, arg=[chapter.name, run], timeout=30_000, polling=250)
        if partner is not None:  # quiet cores for the timing: the partner's kernel is done too
            page.evaluate(RAN_IN_TIME, [partner.name, RUN_TIMEOUT_MS])
            page.wait_for_function(KERNEL_READY, arg=partner.name, timeout=30_000, polling=250)
        ran = time.monotonic()

        page.evaluate(ACTIVATE, chapter.name)
        page.evaluate(MARK_CELL, widget)
        cell = page.locator("[data-attncourse-widget=yes]")
        output = cell.locator(".jp-OutputArea-output").last
        handle = cell.locator(".widget-slider .noUi-handle").first
        try:
            handle.wait_for(state="visible", timeout=30_000)
        except Exception:
            shown = output.inner_text()[:500] if output.count() else "(no output)"
            raise AssertionError(
                f"{chapter.name}: no slider widget shown; the cell shows: {shown}"
            ) from None
        handle.scroll_into_view_if_needed()
        page.evaluate(QUIET)  # the cells around the widget drawn, before the screenshot
        output.screenshot(path=tmp_path / f"{chapter.stem}.png")
        text = output.inner_text()
        assert not re.search(r"\b[VH]Box\(children=|Error displaying widget", text), (
            f"{chapter.name}: the widget renders as text: {text[:300]}"
        )
        cut = page.evaluate(CUT_LABELS, "[data-attncourse-widget=yes]")
        assert not cut, f"{chapter.name}: the widget's labels are cut: {cut}"
        image = output.locator("img")
        if image.count():  # every chapter's widget draws a PNG, except chapter 00's text bars
            size = image.first.evaluate("img => [img.naturalWidth, img.naturalHeight]")
            assert min(size) > 50, f"{chapter.name}: the widget's image is {size} pixels"

        # the chapter before has shut its kernel down (its close is not waited for)
        deadline = time.monotonic() + 30
        while (left := closing_kernels(base, token)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"{chapter.name}: the kernels of closed chapters still run: {left}"
        latencies = measure_slider(page, handle)
        measured = time.monotonic()
        entry = record(
            chapter.stem,
            latencies,
            open_s=open_s,
            run_s=ran - opened,
            widget_s=measured - ran,
            total_s=measured - start,
        )
    finally:
        page.evaluate(CLOSE, chapter.name)
    assert entry["median_ms"] <= LATENCY_BUDGET_MS, (
        f"{chapter.name}: median {entry['median_ms']:.0f} ms from key press to new image "
        f"(budget {LATENCY_BUDGET_MS:.0f} ms): {entry['latencies_ms']}"
    )
