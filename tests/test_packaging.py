"""A plain (non-editable) install carries every module of the package and its data files."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "build", "*.egg-info", "workspace", "__pycache__", ".ipynb_checkpoints"
)


def test_the_wheel_holds_every_module_and_the_shipped_weights(tmp_path):
    source = (
        tmp_path / "src"
    )  # a clean copy: no build/ left over from an earlier build can fill gaps
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(source), "-w", str(tmp_path)],
        check=True,
        cwd=tmp_path,
    )
    (wheel,) = tmp_path.glob("attncourse-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    package = ROOT / "attncourse"
    expected = {p.relative_to(ROOT).as_posix() for p in package.rglob("*.py")}
    expected |= {p.relative_to(ROOT).as_posix() for p in (package / "weights").glob("*.pt")}
    assert any(
        name.startswith("attncourse/attention/") for name in expected
    )  # subpackages are in question
    assert "attncourse/weights/ch02_seq2seq.pt" in expected
    assert expected - names == set(), f"missing from the wheel: {sorted(expected - names)}"
