"""The ``attncourse`` command: release student copies, grade submissions, start the course.

    attncourse release [NOTEBOOK ...] --out DIR [--force] [--source DIR] [--lang LANG]
    attncourse course [NOTEBOOK ...] --out DIR [--course-id ID] [--exchange DIR] [--force]
                      [--source DIR]
    attncourse grade SUBMISSION ... [-j N] [--csv FILE] [--csv-format {attncourse,nbgrader}]
                     [--json FILE] [--feedback DIR] [--timeout SECONDS]
                     [--notebook-timeout SECONDS] [--memory MB] [--source DIR] [--no-sandbox]
                     [--shard K/N]
    attncourse merge SHARD.json ... [--csv FILE] [--csv-format {attncourse,nbgrader}]
                     [--json FILE] [--feedback DIR]
    attncourse progress [NN ...] [--workspace DIR] [--source DIR]
    attncourse start [--workspace DIR] [--source DIR] [--no-browser] [--port N] [--ip ADDRESS]
                     [--instructor] [--dry-run] [--lang LANG] [JUPYTER LAB OPTIONS ...]
    attncourse site --out DIR [--source DIR] [--lang LANG ...]
    attncourse present NN [--source DIR] [--port N] [--no-browser] [--dry-run] [--lang LANG]

LANG is en (the default) or zh_CN (the Chinese edition, built from attncourse/i18n's catalogues).

Exit status: 0 done (a failed exercise is a score, not an error), 2 bad input (or a missing
extra: the message names the one to install).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DESCRIPTION = "Release, grade and start the attncourse notebooks (built on nbgrader)."


def _add_lang(p, what: str) -> None:
    from ..i18n import LANGUAGES

    p.add_argument(
        "--lang",
        default="en",
        choices=list(LANGUAGES),
        help=f"the edition {what}: "
        + ", ".join(f"{c} {n}" for c, n in LANGUAGES.items())
        + " (default: en)",
    )


def _parser() -> argparse.ArgumentParser:
    from .course import DEFAULT_TIMEOUT
    from .instructor import DEFAULT_COURSE_ID, DEFAULT_EXCHANGE
    from .notebooks import DEFAULT_SOURCE

    parser = argparse.ArgumentParser(prog="attncourse", description=DESCRIPTION)
    sub = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="{release,course,grade,merge,progress,start,site,present}",
    )
    source_help = f"folder of the instructor notebooks (default: {DEFAULT_SOURCE})"

    p = sub.add_parser(
        "release",
        help="write student copies: no solutions, no hidden tests, no outputs",
        description="Write student copies of the instructor notebooks "
        "(nbgrader generate_assignment). "
        "A notebook the learner changed since it was released is never overwritten, "
        "unless --force is given (the old file is then backed up).",
    )
    _notebooks_option(p)
    p.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="where to write the student copies"
    )
    p.add_argument(
        "--force", action="store_true", help="overwrite notebooks the learner has changed"
    )
    p.add_argument("--source", type=Path, default=DEFAULT_SOURCE, metavar="DIR", help=source_help)
    _add_lang(p, "to release")

    p = sub.add_parser(
        "course",
        help="make an instructor's nbgrader course directory (JupyterHub and nbgrader's exchange)",
        description="Make (or bring up to date) an nbgrader course directory: nbgrader_config.py "
        "(the folder, the course id, nbgrader's exchange) and source/chNN/NN_name.ipynb, one "
        "assignment per chapter. Then, inside it: nbgrader generate_assignment chNN, nbgrader "
        "release_assignment chNN, nbgrader collect chNN, attncourse grade "
        "submitted/*/chNN/*.ipynb. A file you changed is kept unless --force is given.",
    )
    _notebooks_option(p)
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="the course directory (e.g. ~/course)",
    )
    p.add_argument(
        "--course-id",
        default=DEFAULT_COURSE_ID,
        metavar="ID",
        help="nbgrader's course id, the same in every user's settings "
        f"(default {DEFAULT_COURSE_ID})",
    )
    p.add_argument(
        "--exchange",
        type=Path,
        default=DEFAULT_EXCHANGE,
        metavar="DIR",
        help=f"nbgrader's exchange, writable by every user (default {DEFAULT_EXCHANGE})",
    )
    p.add_argument("--force", action="store_true", help="overwrite files you have changed")
    p.add_argument("--source", type=Path, default=DEFAULT_SOURCE, metavar="DIR", help=source_help)

    p = sub.add_parser(
        "grade",
        help="grade submissions headless, in a sandbox, with hidden tests",
        description="Grade submitted notebooks against the instructor notebook of the same file "
        "name. Each submission's answers run in a bubblewrap sandbox of their own; the checks "
        "(visible and hidden, the hidden ones on fresh random inputs at every run) are computed "
        "by the grader, outside it. Prints the points per exercise (grade_id) and the total. "
        "The student is the folder under submitted/ (nbgrader's submitted/STUDENT/ASSIGNMENT/"
        "NN_name.ipynb), else the folder holding the notebook.",
    )
    p.add_argument(
        "submissions", nargs="+", metavar="SUBMISSION", help="submitted notebooks (NN_name.ipynb)"
    )
    p.add_argument(
        "-j", "--jobs", type=int, metavar="N", help="submissions graded at once (default: cores)"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"time limit per answer cell and per call (default {DEFAULT_TIMEOUT})",
    )
    p.add_argument(
        "--notebook-timeout",
        type=float,
        metavar="SECONDS",
        help="time limit for a whole notebook, replays after a hang included (default: the "
        "larger of 600 and 10 x --timeout)",
    )
    p.add_argument(
        "--memory",
        type=int,
        default=3072,
        metavar="MB",
        help="memory per submission: all its processes together where a cgroup can be made, "
        "and each process in any case (default 3072)",
    )
    p.add_argument("--source", type=Path, default=DEFAULT_SOURCE, metavar="DIR", help=source_help)
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run submissions without bubblewrap: UNSAFE, only for work you trust",
    )
    p.add_argument(
        "--shard",
        metavar="K/N",
        help="grade only shard K of N (K from 0 to N-1): of the batch's students sorted by id, "
        "every N-th from the K-th; give every shard the same submissions, write --json, and "
        "join the shards with attncourse merge",
    )
    _report_options(p)

    p = sub.add_parser(
        "merge",
        help="join the JSON of a class graded in shards (grade --shard K/N)",
        description="Join the JSON files of every shard of one batch (attncourse grade --shard "
        "K/N --json FILE) into what grading the batch whole writes: the same CSV, JSON and "
        "feedback reports, in the same order. Every shard must be there exactly once.",
    )
    p.add_argument("shards", nargs="+", metavar="SHARD.json", help="the shards' JSON files")
    _report_options(p)

    p = sub.add_parser(
        "progress",
        help="which exercises of your workspace pass, with the grader's own checks",
        description="Check the exercises of your workspace's notebooks as the grader would, and "
        "show which pass: one line per chapter, in chapter order, and each exercise of a chapter "
        "you have worked on. A chapter you have not touched is not checked (all its answers are "
        "still to write).",
    )
    p.add_argument(
        "chapters",
        nargs="*",
        metavar="NN",
        help="only these chapters (e.g. 03), with every message in full (default: all)",
    )
    p.add_argument(
        "--workspace",
        type=Path,
        default=Path("workspace"),
        metavar="DIR",
        help="your copy of the course (default: ./workspace)",
    )
    p.add_argument("--source", type=Path, default=DEFAULT_SOURCE, metavar="DIR", help=source_help)

    p = sub.add_parser(
        "start",
        help="make your workspace (if needed) and open it in JupyterLab",
        description="Make the workspace, a student copy of every chapter, if it is not there "
        "(your changes are never overwritten; new or untouched notebooks are updated), then open "
        "JupyterLab on it, in chapter 00 the first time.",
        epilog="Any other option goes to jupyter lab as it is (e.g. --ServerApp.token=SECRET). "
        "Run as root (a container, a cloud machine), it passes --allow-root and says so.",
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
        "--no-browser",
        action="store_true",
        help="open no browser; JupyterLab prints the address (with its token) to open",
    )
    p.add_argument(
        "--port",
        type=int,
        metavar="N",
        help="port to serve on (default: 8888 or the next free one)",
    )
    p.add_argument(
        "--ip",
        metavar="ADDRESS",
        help="address to listen on (default: localhost; 0.0.0.0 to be reached from outside a "
        "container or a remote machine)",
    )
    p.add_argument(
        "--instructor",
        action="store_true",
        help="keep nbgrader's JupyterLab extensions (Formgrader, Create Assignment, Validate), "
        "which learners do not see",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="write nothing: say what would be made and print the jupyter lab command",
    )
    _add_lang(p, "of the workspace's notebooks and of the checks' messages")

    p = sub.add_parser(
        "site",
        help="build a static HTML site of the course (works offline)",
        description="Build a static HTML site of every chapter from the executed notebooks, as "
        "they are stored (nothing is re-executed): figures, maths, claim checks, and the "
        "exercises without solutions. A widget shows its stored figure, if the notebook stored "
        "one, and how to run it live.",
    )
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="where to write the site (DIR/index.html; another edition in DIR/LANG/)",
    )
    p.add_argument("--source", type=Path, default=DEFAULT_SOURCE, metavar="DIR", help=source_help)
    p.add_argument(
        "--lang",
        nargs="+",
        default=["en", "zh_CN"],
        metavar="LANG",
        help="the editions to build, each page linking to the same page in the others "
        "(default: en zh_CN)",
    )

    p = sub.add_parser(
        "present",
        help="show a chapter as slides with live widgets (Voila, reveal.js)",
        description="Serve chapter NN as reveal.js slides with live widgets (Voila's reveal "
        "template, offline) and open it in the browser. The chapter runs in a fresh kernel before "
        "the first slide shows. Keys: Space next, arrows move, Esc overview, F full screen.",
    )
    p.add_argument("chapter", metavar="NN", help="chapter number (01 or 1), or a notebook's path")
    p.add_argument("--source", type=Path, default=DEFAULT_SOURCE, metavar="DIR", help=source_help)
    p.add_argument(
        "--port",
        type=int,
        metavar="N",
        help="port to serve on (default: 8866 or the next free one)",
    )
    p.add_argument("--no-browser", action="store_true", help="only print the slides' address")
    p.add_argument(
        "--dry-run", action="store_true", help="print the voila command instead of running it"
    )
    _add_lang(p, "to present")
    return parser


def _notebooks_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "notebooks",
        nargs="*",
        metavar="NOTEBOOK",
        help="instructor notebooks (default: all NN_*.ipynb)",
    )


def _report_options(p: argparse.ArgumentParser) -> None:
    """What ``grade`` and ``merge`` write."""
    p.add_argument(
        "--csv",
        type=Path,
        metavar="FILE",
        help="a gradebook: one row per student and assignment, one column per exercise",
    )
    p.add_argument(
        "--csv-format",
        choices=("attncourse", "nbgrader"),
        default="attncourse",
        help="attncourse: student, assignment, exercises, total, max_points, percentage; "
        "nbgrader: the columns of `nbgrader export` (default: attncourse)",
    )
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the results as JSON")
    p.add_argument(
        "--feedback",
        type=Path,
        metavar="DIR",
        help="write an HTML report per submission: DIR/STUDENT/ASSIGNMENT/NOTEBOOK.html",
    )


def _report(args, results, timeout, shard=None) -> None:
    """Write what ``grade`` or ``merge`` was asked to write."""
    from . import feedback
    from .grade import write_csv, write_json

    if args.json is not None:
        write_json(results, args.json, timeout, shard)
    if args.csv is not None:
        write_csv(results, args.csv, args.csv_format)
    if args.feedback is not None:
        written = feedback.write(results, args.feedback)
        reports = "report" if len(written) == 1 else "reports"
        print(f"wrote {len(written)} feedback {reports} under {args.feedback}")


def _writable(option: str, path: Path | None) -> None:
    from .notebooks import UsageError

    if path is not None and not path.absolute().parent.is_dir():
        raise UsageError(f"{option} {path}: no folder {path.absolute().parent}")


def main(argv=None) -> int:
    from .extras import require
    from .notebooks import UsageError

    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "start":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        require(args.command)
        if args.command == "release":
            from ..i18n import edition
            from .release import release

            with edition(args.source, args.lang) as source:
                notebooks = [  # a course notebook named: its edition in ``lang``
                    source / Path(n).name
                    if args.lang != "en" and (source / Path(n).name).is_file()
                    else n
                    for n in args.notebooks
                ]
                release(notebooks, args.out, force=args.force, source=source)
        elif args.command == "course":
            from .instructor import make_course

            make_course(
                args.out,
                args.notebooks,
                course_id=args.course_id,
                exchange=args.exchange,
                source=args.source,
                force=args.force,
            )
        elif args.command == "grade":
            from .grade import Shard, grade
            from .sandbox import Limits

            for option, path in (("--json", args.json), ("--csv", args.csv)):
                _writable(option, path)
            shard = None if args.shard is None else Shard.parse(args.shard)
            if shard is not None and args.json is None:
                raise UsageError(
                    f"--shard {args.shard} needs --json FILE: attncourse merge joins the "
                    "shards' JSON files"
                )
            if args.memory < 512:
                raise UsageError(f"--memory must be at least 512 MB, got {args.memory}")
            if args.no_sandbox:
                print(
                    "attncourse grade: --no-sandbox: submissions run unsandboxed, with your "
                    "rights; only for work you trust",
                    file=sys.stderr,
                )
            results = grade(
                args.submissions,
                source=args.source,
                timeout=args.timeout,
                notebook_timeout=args.notebook_timeout,
                jobs=args.jobs,
                sandbox=not args.no_sandbox,
                limits=Limits(memory_mb=args.memory),
                shard=shard,
            )
            _report(args, results, args.timeout, shard)
        elif args.command == "merge":
            from .grade import merge

            for option, path in (("--json", args.json), ("--csv", args.csv)):
                _writable(option, path)
            results, timeout = merge(args.shards)
            _report(args, results, timeout)
            print(f"merged {len(args.shards)} shards: {len(results)} submissions")
        elif args.command == "progress":
            from .progress import progress

            progress(args.workspace, source=args.source, chapters=args.chapters)
        elif args.command == "site":
            from .site import site

            site(args.out, source=args.source, langs=args.lang)
        elif args.command == "present":
            from .present import present

            return present(
                args.chapter,
                source=args.source,
                port=args.port,
                open_browser=not args.no_browser,
                dry_run=args.dry_run,
                lang=args.lang,
            )
        elif args.command == "start":
            from .start import start

            return start(
                args.workspace,
                source=args.source,
                dry_run=args.dry_run,
                instructor=args.instructor,
                no_browser=args.no_browser,
                port=args.port,
                ip=args.ip,
                extra=extra,
                lang=args.lang,
            )
    except UsageError as e:  # it may quote a path a student named: shown without escapes
        from .output import clean

        print(f"attncourse {args.command}: error: {clean(e, 4000)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
