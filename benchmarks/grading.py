"""How long a class takes to grade: N submissions of one chapter, graded as `attncourse grade`
grades them (each in its own sandbox, ``--jobs`` at a time).

    python benchmarks/grading.py                      # 200 submissions of chapter 01, jobs = cores
    python benchmarks/grading.py --count 40 --notebook notebooks/03_entropy_and_temperature.ipynb

Half the submissions are the instructor's answers (full marks), half a fresh release (zero), so
both a passing and a failing run are timed; five of them (``--hostile``) are hostile instead: an
answer cell that loops for ever, a fork bomb, a memory bomb, one that fills its disk and one that
leaves processes behind. They are laid out as nbgrader lays them out
(``submitted/<student>/<assignment>/<notebook>``). Prints the total time, the time per
submission and the projected time for 200 submissions; budget: 200 in 10 minutes on 2 cores,
every honest submission graded right and every hostile one held to its own exercises.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attncourse.classroom.grade import grade  # noqa: E402
from attncourse.classroom.release import release  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUDGET_SECONDS, BUDGET_COUNT = 600, 200
HOSTILE = [  # an answer cell's code, in place of the first exercise's answer
    "while True:\n    pass\n",
    "import os\nfor _ in range(10_000):\n    try:\n        os.fork()\n    except OSError:\n"
    "        break\n",
    "x = bytearray(64 << 30)\n",
    "for i in range(25):\n    try:\n        open(f'/tmp/f{i}', 'wb').write(b'x' * (60 << 20))\n"
    "    except OSError:\n        break\n",
    "import subprocess\nfor _ in range(8):\n"
    "    subprocess.Popen(['sleep', '600'], start_new_session=True)\n",
]


def _hostile(release: Path, target: Path, code: str) -> None:
    nb = json.loads(release.read_text())
    meta = [c.get("metadata", {}).get("nbgrader", {}) for c in nb["cells"]]
    first = next(c for c, m in zip(nb["cells"], meta) if m.get("solution"))
    first["source"] = code
    target.write_text(json.dumps(nb))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--hostile", type=int, default=len(HOSTILE), help="hostile submissions")
    parser.add_argument(
        "--notebook", type=Path, default=ROOT / "notebooks" / "01_attention_as_selection.ipynb"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="attncourse-bench-") as tmp:
        tmp = Path(tmp)
        release([args.notebook], tmp / "release", echo=lambda _: None)
        submissions = []
        release_copy = tmp / "release" / args.notebook.name
        spread = max(1, args.count // max(1, args.hostile))
        hostile = {i * spread + 1: HOSTILE[i % len(HOSTILE)] for i in range(args.hostile)}
        for i in range(args.count):
            folder = tmp / "submitted" / f"student{i:03d}" / "ps1"
            folder.mkdir(parents=True)
            if i in hostile:
                _hostile(release_copy, folder / args.notebook.name, hostile[i])
            else:
                source = args.notebook if i % 2 == 0 else release_copy
                shutil.copyfile(source, folder / args.notebook.name)
            submissions.append(folder / args.notebook.name)
        started = time.perf_counter()
        results = grade(
            submissions,
            source=args.notebook.parent,
            jobs=args.jobs,
            progress=False,
            echo=lambda _: None,
        )
        seconds = time.perf_counter() - started
    honest = [(i, r) for i, r in enumerate(results) if i not in hostile]
    full = sum(r.points == r.max_points for i, r in honest if i % 2 == 0)
    zero = sum(r.points == 0 for i, r in honest if i % 2 == 1)
    held = sum(  # a zero with a reason for each exercise, and the class graded around it
        r.points == 0 and all(e.note for e in r.exercises)
        for i, r in enumerate(results)
        if i in hostile
    )
    projected = seconds / args.count * BUDGET_COUNT
    print(
        f"{args.count} submissions of {args.notebook.name}, {args.jobs} at a time: {seconds:.0f} s"
    )
    print(
        f"  {seconds / args.count:.2f} s per submission; instructor copies at full marks: "
        f"{full}/{sum(i % 2 == 0 for i, _ in honest)}, releases at zero: "
        f"{zero}/{sum(i % 2 == 1 for i, _ in honest)}, hostile ones held: {held}/{len(hostile)}"
    )
    verdict = "ok" if projected <= BUDGET_SECONDS else "OVER BUDGET"
    print(
        f"  {BUDGET_COUNT} submissions: {projected / 60:.1f} min (budget "
        f"{BUDGET_SECONDS // 60} min): {verdict}"
    )
    ok = projected <= BUDGET_SECONDS and full + zero == len(honest) and held == len(hostile)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
