"""The course in another language, from one source: the English notebooks stay the source, and
each language has one gettext catalogue per chapter beside this module (``zh_CN/NN_name.po``).

An entry is one markdown cell: its English text is the ``msgid``, its translation the ``msgstr``.
Code cells are never translated, so a translated notebook's code cells, outputs and nbgrader
metadata are the English ones byte for byte, and the grader, nbval and the answer suites hold for
every edition.

``update`` brings a catalogue in step with its notebook the way gettext's ``msgmerge`` does: a new
cell gets an empty entry; a changed cell keeps its old translation, marked ``fuzzy`` (stale) with
the English it translated as ``previous_msgid``; an entry whose cell is gone becomes obsolete.
``translate`` builds the translated notebook: a cell whose entry is missing or stale stays in
English (``status`` says which).
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import difflib
import functools
import os
import re
import tempfile
from pathlib import Path

import polib

LANGUAGES = {"en": "English", "zh_CN": "简体中文"}
CATALOGUES = Path(__file__).resolve().parent
GLOSSARY = CATALOGUES / "glossary.tsv"
STALE_MATCH = 0.6  # a changed cell finds its old entry if the texts are at least this similar


def catalogue_path(notebook: Path, lang: str) -> Path:
    return CATALOGUES / lang / f"{Path(notebook).stem}.po"


def _check_language(lang: str) -> None:
    if lang not in LANGUAGES or lang == "en":  # a ValueError: the commands say it as bad input
        raise ValueError(
            f"unknown language {lang!r}: the course has "
            + ", ".join(code for code in LANGUAGES if code != "en")
            + " besides en"
        )


def units(nb) -> list[str]:
    """The texts to translate, in notebook order, each once: the markdown cells' sources."""
    seen = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.strip() and cell.source not in seen:
            seen.append(cell.source)
    return seen


def load(notebook: Path, lang: str) -> polib.POFile:
    """The catalogue of ``notebook`` in ``lang`` (an empty one if there is none yet)."""
    _check_language(lang)
    return _load(catalogue_path(notebook, lang), lang)


def _load(path: Path, lang: str) -> polib.POFile:
    if path.is_file():
        return polib.pofile(str(path), wrapwidth=0)
    po = polib.POFile(wrapwidth=0)
    po.metadata = {
        "Project-Id-Version": "attncourse",
        "Language": lang,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
    }
    return po


def update(notebook: Path, lang: str) -> dict[str, int]:
    """Bring the catalogue in step with the notebook (see the module docstring) and save it.
    Returns {"new": n, "stale": n, "obsolete": n, "kept": n}."""
    import nbformat

    texts = units(nbformat.read(notebook, as_version=4))
    return _merge(load(notebook, lang), texts, catalogue_path(notebook, lang))


def _merge(po: polib.POFile, texts: list[str], path: Path) -> dict[str, int]:
    current = {e.msgid: e for e in po if not e.obsolete}
    unmatched = [e for msgid, e in current.items() if msgid not in texts]
    counts = {"new": 0, "stale": 0, "obsolete": 0, "kept": 0}
    entries = []
    for text in texts:
        entry = current.get(text)
        if entry is not None:
            counts["kept"] += 1
        else:
            old = _closest(text, unmatched)
            if old is not None and old.msgstr:
                unmatched.remove(old)
                entry = polib.POEntry(msgid=text, msgstr=old.msgstr, flags=["fuzzy"])
                entry.previous_msgid = old.previous_msgid or old.msgid
                counts["stale"] += 1
            else:
                entry = polib.POEntry(msgid=text, msgstr="")
                counts["new"] += 1
        entries.append(entry)
    for entry in unmatched:
        if entry.msgstr:
            entry.obsolete = True
            entries.append(entry)
            counts["obsolete"] += 1
    po[:] = entries
    path.parent.mkdir(parents=True, exist_ok=True)
    po.save(str(path))
    return counts


def _closest(text: str, candidates: list[polib.POEntry]) -> polib.POEntry | None:
    best, best_ratio = None, STALE_MATCH
    for entry in candidates:
        ratio = difflib.SequenceMatcher(None, entry.msgid, text, autojunk=False).ratio()
        if ratio >= best_ratio:
            best, best_ratio = entry, ratio
    return best


def status(notebook: Path, lang: str) -> dict[str, list[str]]:
    """{"missing": [...], "stale": [...]}: the English texts without a current translation (each
    cut to its first line)."""
    import nbformat

    return _status(load(notebook, lang), units(nbformat.read(notebook, as_version=4)))


def _status(po: polib.POFile, texts: list[str]) -> dict[str, list[str]]:
    entries = {e.msgid: e for e in po if not e.obsolete}
    found = {"missing": [], "stale": []}
    for text in texts:
        entry = entries.get(text)
        first_line = text.strip().splitlines()[0][:80]
        if entry is None or not entry.msgstr:
            found["missing"].append(first_line)
        elif "fuzzy" in entry.flags:
            found["stale"].append(first_line)
    return found


def translations(notebook: Path, lang: str) -> dict[str, str]:
    """{English markdown cell: its current translation in ``lang``} of ``notebook``'s catalogue
    (none for a notebook without one)."""
    po = load(notebook, lang)
    return {e.msgid: e.msgstr for e in po if e.msgstr and not e.obsolete and "fuzzy" not in e.flags}


def translate(nb, notebook: Path, lang: str):
    """A copy of ``nb`` (the notebook read from ``notebook``) with its markdown in ``lang``; a
    cell without a current translation stays in English."""
    current = translations(notebook, lang)
    out = copy.deepcopy(nb)
    for cell in out.cells:
        if cell.cell_type == "markdown" and cell.source in current:
            cell.source = current[cell.source]
    out.metadata["language"] = lang
    return out


def translate_folder(source: Path, out: Path, lang: str, pattern: str = "[0-9][0-9]_*.ipynb"):
    """Write ``lang`` editions of the notebooks in ``source`` into ``out`` (made if needed);
    ``lang == "en"`` copies them. Returns the notebooks written."""
    import nbformat

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for notebook in sorted(Path(source).glob(pattern)):
        nb = nbformat.read(notebook, as_version=4)
        if lang != "en":
            nb = translate(nb, notebook, lang)
        nbformat.write(nb, out / notebook.name)
        written.append(out / notebook.name)
    return written


@contextlib.contextmanager
def edition(source: Path, lang: str, echo=print):
    """The notebooks of ``source`` in ``lang``: ``source`` itself for English, else a temporary
    folder of translated copies, removed afterwards. A chapter with cells still in English
    (missing or stale translations) is named through ``echo``."""
    if lang == "en":
        yield Path(source)
        return
    _check_language(lang)
    with tempfile.TemporaryDirectory(prefix=f"attncourse-{lang}-") as tmp:
        for path in translate_folder(source, Path(tmp), lang):
            left = status(Path(source) / path.name, lang)
            if left["missing"] or left["stale"]:
                echo(
                    f"{path.stem}: {len(left['missing'])} cells not yet translated and "
                    f"{len(left['stale'])} stale stay in English"
                )
        yield Path(tmp)


@functools.cache
def glossary() -> dict[str, str]:
    """{English term: Chinese term} from ``glossary.tsv``, the source of every glossary line."""
    terms = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            english, chinese = line.split("\t")
            terms[english.strip()] = chinese.strip()
    return terms


def _is_cjk(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff"


def glossary_lines(nb) -> list[tuple[str, str]]:
    """(English, Chinese) pairs of a notebook's glossary lines (``> **Glossary** · weighted
    average 加权平均 · ...``), in order."""
    pairs = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for block in cell.source.split("\n\n"):
            lines = [line.removeprefix(">").strip() for line in block.strip().splitlines()]
            text = " ".join(lines)
            if not text.startswith("**Glossary**"):
                continue
            for item in text.split(" · ")[1:]:
                item = item.strip().rstrip("·").strip()
                words = item.split()
                first = next((i for i, w in enumerate(words) if any(map(_is_cjk, w))), None)
                if not first:
                    continue
                if first > 1 and words[first - 1][:1].isupper():
                    first -= 1  # a name that begins the Chinese term: "Adam optimiser Adam 优化器"
                chinese = " ".join(words[first:]).split(" (")[0].strip()  # less a remark
                pairs.append((" ".join(words[:first]), chinese))
    return pairs


# inline maths and code may run over a line break, as in markdown, never over a blank line
_MATHS = re.compile(r"\$\$.+?\$\$|\$(?:[^$\n]|\n(?!\n))+?\$", re.S)
_CODE = re.compile(r"`(?:[^`\n]|\n(?!\n))+`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _tokens(text: str) -> dict[str, list[str]]:
    """What a translation must keep as it is: maths, code spans, link targets, heading levels,
    table rows, HTML tags and a message's fields."""
    lines = text.splitlines()
    return {
        "maths": sorted(" ".join(m.split()) for m in _MATHS.findall(text)),
        "code": sorted(" ".join(c.split()) for c in _CODE.findall(_MATHS.sub("", text))),
        "links": sorted(_LINK.findall(text)),
        "headings": [line.split(" ")[0] for line in lines if line.startswith("#")],
        "table rows": [str(line.count("|")) for line in lines if line.lstrip().startswith("|")],
        "html": sorted(re.findall(r"</?(?:details|summary)>", text)),
        "fields": sorted(re.findall(r"\{\w+\}", text)),  # a message's {name}, filled in
    }


def mismatches(english: str, translation: str) -> list[str]:
    """What a translation changed that it must keep: the maths, code spans, link targets, heading
    levels, table shape and <details> tags of the English (empty when it kept all of them)."""
    want, got = _tokens(english), _tokens(translation)
    found = []
    for what in want:
        if want[what] != got[what]:
            missing = [t for t in want[what] if t not in got[what]][:3]
            extra = [t for t in got[what] if t not in want[what]][:3]
            found.append(f"{what} differ: missing {missing}, extra {extra}")
    return found


# ------------------------------------------------------------------ the checks' messages
# The checks speak the learner's language: ``ATTNCOURSE_LANG`` (set by ``attncourse start
# --lang``) names it, and ``LANG/messages.po`` holds the translations of every sentence the course
# says at run time (``say``): the checks' named mistakes, hints, case labels and the engine's
# sentences, the answer scan's refusals, the grader's notes and reports, the widgets' labels. A
# sentence without a translation stays English. The grader, which marks submissions of either
# language side by side, names the language of each one's messages with ``speaking``.

_SPEAKING: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "attncourse_speaking", default=None
)


def messages_path(lang: str) -> Path:
    return CATALOGUES / lang / "messages.po"


def learner_language() -> str:
    """The language ``say`` speaks: the one ``speaking`` names, else ``ATTNCOURSE_LANG``."""
    lang = _SPEAKING.get() or os.environ.get("ATTNCOURSE_LANG", "en")
    return lang if lang in LANGUAGES else "en"


@contextlib.contextmanager
def speaking(lang: str):
    """``say`` speaks ``lang`` (a code of ``LANGUAGES``; anything else is English) inside the
    block, in this thread (and task) only, whatever ``ATTNCOURSE_LANG`` says."""
    token = _SPEAKING.set(lang if lang in LANGUAGES else "en")
    try:
        yield
    finally:
        _SPEAKING.reset(token)


def notebook_language(metadata) -> str:
    """The language of a notebook from its metadata (``translate`` writes ``language``): a code
    of ``LANGUAGES``, English when it names none (a submission's metadata is untrusted)."""
    lang = metadata.get("language") if isinstance(metadata, dict) else None
    return lang if isinstance(lang, str) and lang in LANGUAGES else "en"


def html_language(lang: str) -> str:
    """The language code HTML's ``lang`` attribute takes (BCP 47): ``zh_CN`` is ``zh-CN``."""
    return lang.replace("_", "-")


@functools.cache
def _messages(lang: str) -> dict[str, str]:
    path = messages_path(lang)
    if not path.is_file():
        return {}
    po = polib.pofile(str(path), wrapwidth=0)
    return {e.msgid: e.msgstr for e in po if e.msgstr and not e.obsolete and "fuzzy" not in e.flags}


def say(text: str, **values) -> str:
    """``text`` in the learner's language (``text.format(**values)`` when values are given)."""
    lang = learner_language()
    template = text if lang == "en" else _messages(lang).get(text, text)
    if not values:
        return template
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError):  # a translation that lost a field: the English
        return text.format(**values)


def load_messages(lang: str) -> polib.POFile:
    _check_language(lang)
    return _load(messages_path(lang), lang)


def update_messages(lang: str, texts: list[str]) -> dict[str, int]:
    """``update`` for the checks' messages (``LANG/messages.po``); ``texts``: every message a
    check can say (``attncourse.exercises.messages()``)."""
    return _merge(load_messages(lang), texts, messages_path(lang))


def messages_status(lang: str, texts: list[str]) -> dict[str, list[str]]:
    return _status(load_messages(lang), texts)
