"""Keep the translation catalogues in step with the English notebooks.

    python -m attncourse.i18n update [--lang zh_CN] [NN ...]   new, stale and obsolete entries
    python -m attncourse.i18n status [--lang zh_CN] [NN ...]   what is missing or stale

(with no NN, every chapter and the checks' messages, ``LANG/messages.po``)
    python -m attncourse.i18n build --out DIR [--lang zh_CN] [--source DIR]   translated notebooks

Exit status of ``status``: 1 when an entry is missing or stale, else 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import exercises
from . import (
    LANGUAGES,
    messages_status,
    status,
    translate_folder,
    update,
    update_messages,
)

ROOT_NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attncourse.i18n", description=__doc__)
    parser.add_argument("action", choices=["update", "status", "build"])
    parser.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="a path or a number (01)")
    parser.add_argument("--lang", default="zh_CN", choices=[c for c in LANGUAGES if c != "en"])
    parser.add_argument("--source", type=Path, default=ROOT_NOTEBOOKS, metavar="DIR")
    parser.add_argument("--out", type=Path, metavar="DIR")
    args = parser.parse_args(argv)
    notebooks = [
        path
        for name in args.notebooks or ["[0-9][0-9]"]
        for path in (
            sorted(args.source.glob(f"{name}_*.ipynb"))
            if not name.endswith(".ipynb")
            else [Path(name)]
        )
    ]
    if not notebooks:
        parser.error(f"no notebooks {' '.join(args.notebooks)} in {args.source}")
    if args.action == "build":
        if args.out is None:
            parser.error("build needs --out DIR")
        for path in translate_folder(args.source, args.out, args.lang):
            print(path)
        return 0
    incomplete = False
    for notebook in notebooks:
        if args.action == "update":
            counts = update(notebook, args.lang)
            print(f"{notebook.stem}: " + ", ".join(f"{n} {what}" for what, n in counts.items()))
        else:
            found = status(notebook, args.lang)
            incomplete |= any(found.values())
            print(f"{notebook.stem}: {len(found['missing'])} missing, {len(found['stale'])} stale")
            for what, texts in found.items():
                for text in texts:
                    print(f"    {what}: {text}")
    if not args.notebooks:
        if args.action == "update":
            counts = update_messages(args.lang, exercises.messages())
            print("messages: " + ", ".join(f"{n} {what}" for what, n in counts.items()))
        else:
            found = messages_status(args.lang, exercises.messages())
            incomplete |= any(found.values())
            print(f"messages: {len(found['missing'])} missing, {len(found['stale'])} stale")
    return 1 if incomplete else 0


if __name__ == "__main__":
    sys.exit(main())
