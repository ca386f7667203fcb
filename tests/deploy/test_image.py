"""deploy/Dockerfile's student image, built and run where a container engine works: chapter 00 of
the student release runs in it top to bottom, and no instructor notebook is in it.

The build fetches a base image and PyTorch's CPU wheel, so CI never depends on it: it is skipped
under CI=true, and wherever neither docker nor podman answers.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TAG = "attncourse-student:test"

# run inside the image: the release of chapter 00, as a student opens it; its one exercise is
# blank in the release, so its check cell is the only one that may fail, saying so
RUN_CHAPTER_00 = """
import nbformat
from nbclient import NotebookClient
nb = nbformat.read("/opt/attncourse/release/00_how_to_use.ipynb", as_version=4)
NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True).execute()
failed = [c.metadata.get("nbgrader", {}).get("grade_id", i) for i, c in enumerate(nb.cells)
          if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
print("FAILED", failed)
"""


def _engine() -> tuple[str | None, str]:
    """(a container engine that answers, or None; why not)."""
    why = []
    for engine in ("docker", "podman"):
        if shutil.which(engine) is None:
            why.append(f"{engine} is not installed")
            continue
        try:
            done = subprocess.run([engine, "info"], capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            why.append(f"`{engine} info` did not answer in 30 s")
            continue
        if done.returncode == 0:
            return engine, ""
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        why.append(f"`{engine} info` failed: {last}")
    return None, "; ".join(why)


def test_the_student_image_runs_chapter_00_and_holds_no_solution():
    if os.environ.get("CI") == "true":
        pytest.skip("the image's build fetches a base image and PyTorch's CPU wheel: not in CI")
    engine, why = _engine()
    if engine is None:
        pytest.skip(f"no container engine works here: {why}")
    build = subprocess.run(
        [engine, "build", "-f", "deploy/Dockerfile", "-t", TAG, "."],
        cwd=ROOT, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    try:
        run = subprocess.run(
            [engine, "run", "--rm", "--network=none", TAG, "python", "-c", RUN_CHAPTER_00],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        assert "FAILED ['ch00_demo_test']" in run.stdout, run.stdout[-3000:]
        left = subprocess.run(
            [engine, "run", "--rm", TAG, "python", "-c",
             "import attncourse, pathlib; "
             "print(sorted(pathlib.Path(attncourse.__file__).parent.rglob('*.ipynb')))"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert left.returncode == 0 and left.stdout.strip() == "[]", left.stdout + left.stderr
    finally:
        subprocess.run([engine, "rmi", "-f", TAG], capture_output=True, timeout=300)
