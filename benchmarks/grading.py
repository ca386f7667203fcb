"""How long a class takes to grade: N submissions of one chapter, graded as `attncourse grade`
grades them (each in its own sandbox, ``--jobs`` at a time).

    python benchmarks/grading.py                      # 200 submissions of chapter 01, jobs = cores
    python benchmarks/grading.py --count 40 --notebook notebooks/03_entropy_and_temperature.ipynb

Half the submissions are the instructor's answers (full marks), half a fresh release (zero), so
both a passing and a failing run are timed. Prints the total time, the time per submission and
the projected time for 200 submissions; budget: 200 in 10 minutes on 2 cores.
"""

import argparse
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument(
        "--notebook", type=Path, default=ROOT / "notebooks" / "01_attention_as_selection.ipynb"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="attncourse-bench-") as tmp:
        tmp = Path(tmp)
        release([args.notebook], tmp / "release", echo=lambda _: None)
        submissions = []
        for i in range(args.count):
            folder = tmp / "submitted" / f"student{i:03d}"
            folder.mkdir(parents=True)
            source = args.notebook if i % 2 == 0 else tmp / "release" / args.notebook.name
            shutil.copyfile(source, folder / args.notebook.name)
            submissions.append(folder / args.notebook.name)
        started = time.perf_counter()
        results = grade(
            submissions, source=args.notebook.parent, jobs=args.jobs, echo=lambda _: None
        )
        seconds = time.perf_counter() - started
    full = sum(r.points == r.max_points for r in results[::2])
    zero = sum(r.points == 0 for r in results[1::2])
    projected = seconds / args.count * BUDGET_COUNT
    print(
        f"{args.count} submissions of {args.notebook.name}, {args.jobs} at a time: {seconds:.0f} s"
    )
    print(
        f"  {seconds / args.count:.2f} s per submission; instructor copies at full marks: "
        f"{full}/{len(results[::2])}, releases at zero: {zero}/{len(results[1::2])}"
    )
    verdict = "ok" if projected <= BUDGET_SECONDS else "OVER BUDGET"
    print(
        f"  {BUDGET_COUNT} submissions: {projected / 60:.1f} min (budget "
        f"{BUDGET_SECONDS // 60} min): {verdict}"
    )
    return 0 if projected <= BUDGET_SECONDS and full + zero == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
