"""A translator's work file for one chapter's catalogue: the entries to translate as plain text,
and back.

    python scripts/translation.py export NN [--lang zh_CN] [--all] > work.md
    python scripts/translation.py import NN work.md [--lang zh_CN]

NN is a chapter number, or ``messages`` for the checks' messages (``LANG/messages.po``: keep
each ``{name}``-style field as it is).

``export`` writes each missing or stale entry (``--all``: every entry) as

    ===== 7 =====
    <the English markdown cell>
    ----- previous translation (stale: the English changed) -----     (stale entries only)
    <the old translation>

``import`` reads a file of ``===== 7 =====`` headers, each followed by the translation of entry
7, stores them (clearing the stale mark) and refuses a translation that changed the maths, code
spans, links, headings, table shape or <details> tags of its English
(``attncourse.i18n.mismatches``).
Run ``python -m attncourse.i18n update`` first, so the catalogue is in step with the notebook.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from attncourse import exercises, i18n

ROOT = Path(__file__).resolve().parents[1]
HEADER = re.compile(r"^===== (\d+) =====$", re.M)


def notebook_of(number: str) -> Path:
    found = sorted((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    if len(found) != 1:
        raise SystemExit(f"no chapter {number!r} in notebooks/")
    return found[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["export", "import"])
    parser.add_argument("chapter", metavar="NN")
    parser.add_argument("work", nargs="?", type=Path)
    parser.add_argument("--lang", default="zh_CN")
    parser.add_argument("--all", action="store_true", help="export every entry")
    args = parser.parse_args(argv)
    if args.chapter == "messages":
        path = i18n.messages_path(args.lang)
        po = i18n.load_messages(args.lang)

        def left():
            return i18n.messages_status(args.lang, exercises.messages())
    else:
        notebook = notebook_of(args.chapter)
        path = i18n.catalogue_path(notebook, args.lang)
        po = i18n.load(notebook, args.lang)

        def left():
            return i18n.status(notebook, args.lang)

    entries = [e for e in po if not e.obsolete]
    if args.action == "export":
        for number, entry in enumerate(entries, 1):
            stale = "fuzzy" in entry.flags
            if args.all or not entry.msgstr or stale:
                print(f"===== {number} =====\n{entry.msgid}")
                if stale:
                    print("----- previous translation (stale: the English changed) -----")
                    print(entry.msgstr)
        return 0
    if args.work is None:
        parser.error("import needs the work file")
    parts = HEADER.split(args.work.read_text(encoding="utf-8"))
    problems = 0
    for number, text in zip(parts[1::2], parts[2::2]):
        index = int(number) - 1
        if not 0 <= index < len(entries):
            print(f"entry {number}: no such entry (1–{len(entries)})", file=sys.stderr)
            problems += 1
            continue
        entry, translation = entries[index], text.strip("\n")
        found = i18n.mismatches(entry.msgid, translation)
        if found:
            print(f"entry {number}: " + "; ".join(found), file=sys.stderr)
            problems += 1
            continue
        entry.msgstr = translation
        if "fuzzy" in entry.flags:
            entry.flags.remove("fuzzy")
            entry.previous_msgid = None
    po.save(str(path))
    found = left()
    print(
        f"{path.stem}: {len(parts) // 2 - problems} stored, {problems} refused; "
        f"{len(found['missing'])} missing, {len(found['stale'])} stale"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
