"""The ``attncourse`` command: release student copies, grade submissions, start the course.

    attncourse release [NOTEBOOK ...] --out DIR [--force] [--source DIR]
    attncourse grade SUBMISSION ... [--json FILE] [--timeout SECONDS] [--notebook-timeout SECONDS]
                                    [--source DIR] [--course-dir DIR]
    attncourse start [--workspace DIR] [--source DIR] [--dry-run] [JUPYTER LAB OPTIONS ...]

Exit status: 0 done (a failed exercise is a score, not an error), 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from pathlib import Path

DESCRIPTION = "Release, grade and start the attncourse notebooks (built on nbgrader)."


def _parser() -> argparse.ArgumentParser:
    from .course import DEFAULT_TIMEOUT
    from .notebooks import DEFAULT_SOURCE

    parser = argparse.ArgumentParser(prog="attncourse", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, metavar="{release,grade,start}")
    source_help = f"folder of the instructor notebooks (default: {DEFAULT_SOURCE})"

    p = sub.add_parser(
        "release",
        help="write student copies: no solutions, no hidden tests, no outputs",
        description="Write student copies of the instructor notebooks "
        "(nbgrader generate_assignment). "
        "A notebook the learner changed since it was released is never overwritten, "
        "unless --force is given (the old file is then backed up).",
    )
    p.add_argument(
        "notebooks",
        nargs="*",
        metavar="NOTEBOOK",
        help="instructor notebooks (default: all NN_*.ipynb)",
    )
    p.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="where to write the student copies"
    )
    p.add_argument(
        "--force", action="store_true", help="overwrite notebooks the learner has changed"
    )
    p.add_argument("--source", type=Path, default=DEFAULT_SOURCE, metavar="DIR", help=source_help)

    p = sub.add_parser(
        "grade",
        help="grade submissions headless, with hidden tests",
        description="Grade submitted notebooks with nbgrader autograde against the instructor "
        "notebook of the same file name: hidden tests restored, a time limit per "
        "cell; prints the points per exercise (grade_id) and the total.",
    )
    p.add_argument(
        "submissions", nargs="+", metavar="SUBMISSION", help="submitted notebooks (NN_name.ipynb)"
    )
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the results as JSON")
    p.add_argument(
        "--timeout",
        type=int,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"time limit per cell (default {DEFAULT_TIMEOUT})",
    )
    p.add_argument(
        "--notebook-timeout",
        type=int,
        metavar="SECONDS",
        help="time limit for a whole notebook, after which the remaining cells get 1 s each "
        "(default: the larger of 600 and 10 x --timeout)",
    )
    p.add_argument("--source", type=Path, default=DEFAULT_SOURCE, metavar="DIR", help=source_help)
    p.add_argument(
        "--course-dir",
        type=Path,
        metavar="DIR",
        help="keep the nbgrader course (gradebook, autograded notebooks) in this new folder",
    )

    p = sub.add_parser(
        "start",
        help="make your workspace (if needed) and open it in JupyterLab",
        description="Make the workspace, a student release of every notebook, if it is not there "
        "(your changes are never overwritten; new or untouched notebooks are "
        "updated), then open JupyterLab on it. Other options go to jupyter lab.",
    )
    p.add_argument(
        "--workspace",
        type=Path,
        default=Path("workspace"),
        metavar="DIR",
        help="your copy of the course (default: ./workspace)",
    )
    p.add_argument("--source", type=Path, default=DEFAULT_SOURCE, metavar="DIR", help=source_help)
    p.add_argument(
        "--dry-run", action="store_true", help="print the jupyter lab command instead of running it"
    )
    return parser


def _jupyter() -> str:
    local = Path(sys.executable).parent / "jupyter"
    return str(local) if local.exists() else (shutil.which("jupyter") or "jupyter")


def main(argv=None) -> int:
    from .grade import grade, write_json
    from .notebooks import UsageError
    from .release import release

    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "start":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "release":
            release(args.notebooks, args.out, force=args.force, source=args.source)
        elif args.command == "grade":
            if args.json is not None and not args.json.parent.is_dir():
                raise UsageError(f"--json {args.json}: no folder {args.json.parent}")
            results = grade(
                args.submissions,
                source=args.source,
                timeout=args.timeout,
                notebook_timeout=args.notebook_timeout,
                course_dir=args.course_dir,
            )
            if args.json is not None:
                write_json(results, args.json, args.timeout)
        elif args.command == "start":
            release([], args.workspace, source=args.source)
            command = [
                _jupyter(),
                "lab",
                f"--ServerApp.root_dir={args.workspace.resolve()}",
                *extra,
            ]
            if args.dry_run:
                print(shlex.join(command))
                return 0
            print(f"opening JupyterLab on {args.workspace} (stop it with Ctrl-C)", flush=True)
            os.execv(command[0], command) if os.path.isabs(command[0]) else os.execvp(
                command[0], command
            )
    except UsageError as e:
        print(f"attncourse {args.command}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
