"""What the browser tests share: where Chromium is, local servers, and measuring a widget's
latency in the page. (A module of its own, not conftest.py: two test folders each have a
conftest, and ``from conftest import`` would find whichever was imported first.)
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
IN_CI = os.environ.get("CI", "").lower() == "true"
# the check of a server's socket options reads /proc and copies sockets with pidfd_getfd
LINUX = sys.platform.startswith("linux")
# median, key press -> new image on screen: a bound against regressions. The Python update is
# held to 100 ms by benchmarks/notebooks.py; the browser's round trip and drawing add 25-50 ms
# (medians measured on 2 cores: 24-70 ms, chapters 06 and 08 the slowest; see the README)
LATENCY_BUDGET_MS = 200.0
PRESSES = 12  # measured key presses per widget, after WARMUP ones
WARMUP = 2
LOCAL = ("http://127.0.0.1:", "data:", "blob:", "about:", "file:")  # this machine only
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]

RESULTS: list[dict] = []  # one entry per widget measured, for the summary and the JSON file


def chromium_path() -> str | None:
    candidates = [os.environ.get("ATTNCOURSE_CHROMIUM"), "/usr/bin/chromium"]
    candidates += [shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")]
    return next((c for c in candidates if c and Path(c).is_file()), None)


# ------------------------------------------------------------------------------------ servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, process: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited ({process.returncode}):\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"no answer from {url} within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def start_server(argv, log: Path, url: str, timeout: float, env=None) -> subprocess.Popen:
    with open(log, "w") as out:
        process = subprocess.Popen(
            argv, cwd=log.parent, stdout=out, stderr=subprocess.STDOUT, env=env
        )
    try:
        wait_for_http(url, process, log, timeout)
    except BaseException:
        stop_server(process)
        raise
    return process


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()  # Jupyter and Voilà shut their kernels down on SIGTERM
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _server_inodes(server_port: int, client_port: int | None) -> list[int]:
    """The inodes of this machine's sockets at the server's end of the established TCP
    connections to ``server_port`` (only the one from ``client_port``, if given)."""
    inodes = []
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        if not table.exists():  # (no IPv6 on this machine)
            continue
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            local, remote = (int(f.rsplit(":", 1)[1], 16) for f in fields[1:3])
            established = fields[3] == "01"
            if established and local == server_port and client_port in (None, remote):
                inodes.append(int(fields[9]))
    return inodes


def _nodelay(holder: Path) -> bool:
    """TCP_NODELAY of the socket at /proc/PID/fd/FD ``holder``: copied into this process with
    pidfd_getfd (Linux 5.6) and asked."""
    pidfd = os.pidfd_open(int(holder.parent.parent.name))
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        copy = libc.syscall(438, pidfd, int(holder.name), 0)  # pidfd_getfd
        if copy < 0:
            raise OSError(ctypes.get_errno(), "pidfd_getfd")
    finally:
        os.close(pidfd)
    with socket.socket(fileno=copy) as server_end:
        return bool(server_end.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


def server_side_nodelay(server_port: int, client_port: int | None = None) -> list[bool]:
    """For each established connection to ``server_port`` (the one from ``client_port``, if
    given): whether the server's end has Nagle's algorithm off (TCP_NODELAY)."""
    targets = {f"socket:[{inode}]" for inode in _server_inodes(server_port, client_port)}
    found = []
    for entry in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(entry) in targets:
                found.append(_nodelay(entry))
        except OSError:  # a process or file descriptor gone meanwhile
            continue
    return found


# ------------------------------------------------------------------------------ measurement

# In the page: remember when a key or a mouse button goes down; when the widget's output changes
# (its image, or
# its text for a widget without one), wait until the new image is decoded and the next frame is
# painted, and record the time since the key press.
WATCH_WIDGET = """(handle) => {
  const output = handle.closest('.jp-OutputArea-output, .jp-OutputArea, section');
  const view = () => {
    const img = output.querySelector('img');
    return img ? img.src : output.innerText;
  };
  window.__latencies = []; window.__keydown = null; window.__view = view();
  const down = () => { window.__keydown = performance.now(); };
  document.addEventListener('keydown', down, true);
  document.addEventListener('pointerdown', down, true);
  new MutationObserver(() => {
    const now = view();
    if (now === window.__view || window.__keydown === null) return;
    window.__view = now;
    const start = window.__keydown; window.__keydown = null;
    const img = output.querySelector('img');
    const painted = () => requestAnimationFrame(
      () => window.__latencies.push(performance.now() - start));
    if (img && !img.complete) img.addEventListener('load', painted, {once: true});
    else painted();
  }).observe(output, {subtree: true, childList: true, attributes: true, characterData: true});
}"""


# the labels, check-box descriptions and slider readouts under the element ``scope`` selects
# whose text does not fit (the widget shows "tempera…")
CUT_LABELS = """(scope) => Array.from(document.querySelectorAll(
    ['.widget-label', '.widget-label-basic', '.widget-readout'].map(c => `${scope} ${c}`).join()))
  .filter(label => label.offsetWidth > 0 && label.scrollWidth > label.clientWidth + 1)
  .map(label => label.textContent)"""


SLIDER_POSITION = """(handle) => ['aria-valuenow', 'aria-valuemin', 'aria-valuemax'].map(
  name => Number(handle.getAttribute(name)))"""


def measure_slider(page, handle, presses: int = PRESSES, warmup: int = WARMUP) -> list[float]:
    """Move the slider ``handle`` with the keyboard (→ and ← in turn, away from an end) and
    return the latencies, key press → new image painted, in ms, after ``warmup`` presses.
    """
    handle.focus()
    page.evaluate(WATCH_WIDGET, handle.element_handle())
    for i in range(warmup + presses):
        done = page.evaluate("window.__latencies.length")
        now, low, high = handle.evaluate(SLIDER_POSITION)
        right = now <= low or (now < high and i % 2 == 0)
        page.keyboard.press("ArrowRight" if right else "ArrowLeft")
        try:
            page.wait_for_function(f"window.__latencies.length > {done}", timeout=10_000)
        except Exception:
            raise AssertionError(
                f"key press {i + 1}: the widget did not redraw within 10 s"
            ) from None
    return page.evaluate("window.__latencies")[warmup:]


def measure_slider_clicks(page, handle, clicks: int = PRESSES, warmup: int = WARMUP):
    """Like ``measure_slider``, with the mouse: click the slider's track at 30 % and 70 % of its
    length in turn (in reveal.js slides the arrow keys move the slides, not the slider).
    """
    track = handle.locator("xpath=ancestor::div[contains(@class, 'noUi-base')][1]")
    page.evaluate(WATCH_WIDGET, handle.element_handle())
    for i in range(warmup + clicks):
        done = page.evaluate("window.__latencies.length")
        page.wait_for_timeout(400)  # the handle's move takes 300 ms; a click during it is ignored
        box = track.bounding_box()
        x = box["x"] + box["width"] * (0.3 if i % 2 == 0 else 0.7)
        page.mouse.click(x, box["y"] + box["height"] / 2)
        try:
            page.wait_for_function(f"window.__latencies.length > {done}", timeout=10_000)
        except Exception:
            raise AssertionError(f"click {i + 1}: the widget did not redraw within 10 s") from None
    return page.evaluate("window.__latencies")[warmup:]


def record(name: str, latencies: list[float], **timings) -> dict:
    ordered = sorted(latencies)
    entry = {
        "name": name,
        "median_ms": statistics.median(ordered),
        "p95_ms": ordered[max(0, round(0.95 * len(ordered)) - 1)],
        "latencies_ms": [round(x, 1) for x in latencies],
        **{k: round(v, 1) for k, v in timings.items()},
    }
    RESULTS.append(entry)
    return entry
