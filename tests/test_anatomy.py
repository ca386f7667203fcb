"""Every chapter has the anatomy of COURSE.md: a concept-first main path with its exercises woven
in, an honest stated time, and an appendix that keeps the source's claim checks; and across the
course each claim of the source has one verdict.
"""

import importlib.util
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = {p.stem[:2]: p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))}

_spec = importlib.util.spec_from_file_location("reading_time", ROOT / "scripts" / "reading_time.py")
reading_time = sys.modules["reading_time"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reading_time)

CHAPTERS = [number for number in NOTEBOOKS if number != "00"]
MAIN_WORDS, MAIN_MINUTES = 4000, 90
# the claim-table rows each chapter had before its rebuild: none may be dropped
CLAIM_ROWS = {
    "01": 13,
    "02": 25,
    "03": 11,
    "04": 24,
    "05": 30,
    "06": 24,
    "07": 14,
    "08": 28,
    "09": 13,
    "10": 24,
}
SOURCE_NAMES = re.compile(
    r"\b(Def|Definition|Lemma|Thm|Theorem|Cor|Corollary|App|Application|Alg|Algorithm|Eq)\b\.?"
    r"|§|\bsource\b|\d+\.\d+\.\d+",
    re.I,
)
EXERCISE_HEADER = re.compile(
    r"\*\*Difficulty\*\* [●○]{3} · \*\*Time\*\* \d+ min · \*\*Points\*\* \d+ · \*\*Practises\*\* \S"
)


def measured(number):
    return reading_time.measure(NOTEBOOKS[number])


def cells(number):
    return nbformat.read(NOTEBOOKS[number], as_version=4).cells


def concept_sections(part):
    return [s for s in part.sections if not s.startswith(("Summary", "Appendix"))]


@pytest.mark.parametrize("number", ["00", *CHAPTERS])
def test_the_stated_time_is_the_reading_time_script_s(number):
    problems = reading_time.problems(measured(number))
    assert not problems, f"chapter {number}: " + "; ".join(problems)


@pytest.mark.parametrize("number", CHAPTERS)
def test_the_main_path_fits_an_hour_or_so(number):
    main = measured(number).main
    assert main.words <= MAIN_WORDS, (
        f"chapter {number}: {main.words} words of prose in the main path"
    )
    assert main.minutes <= MAIN_MINUTES, f"chapter {number}: main path {main.minutes:.0f} min"


@pytest.mark.parametrize("number", CHAPTERS)
def test_main_path_sections_are_named_by_concept(number):
    sections = concept_sections(measured(number).main)
    assert 4 <= len(sections) <= 7, f"chapter {number}: {len(sections)} sections: {sections}"
    named = [s for s in sections if SOURCE_NAMES.search(s)]
    assert not named, f"chapter {number}: section titles name the source: {named}"


@pytest.mark.parametrize("number", CHAPTERS)
def test_exercises_are_woven_into_the_main_path(number):
    chapter = measured(number)
    exercises = chapter.main.exercises
    assert len(exercises) >= 3, f"chapter {number}: {len(exercises)} exercises in the main path"
    sections = {e.section for e in exercises}
    assert len(sections) >= 3, f"chapter {number}: exercises sit in {sorted(sections)}"
    assert exercises[0].position <= 0.40, (
        f"chapter {number}: the first exercise comes after {exercises[0].position:.0%} of the "
        "main path"
    )
    assert chapter.appendix is None or not chapter.appendix.exercises, (
        f"chapter {number}: graded exercises in the appendix"
    )


@pytest.mark.parametrize("number", CHAPTERS)
def test_every_exercise_states_difficulty_time_points_and_what_it_practises(number):
    """An exercise header, then its answer cell and its graded check cell; the header's points
    are the check cell's."""
    chapter_cells = cells(number)
    headers = [i for i, c in enumerate(chapter_cells) if reading_time.EXERCISE.search(c.source)]
    graded = [
        i
        for i, c in enumerate(chapter_cells)
        if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"
    ]
    assert len(headers) == len(graded), f"chapter {number}: {len(headers)} headers, {len(graded)}"
    for header, check in zip(headers, graded):
        text = chapter_cells[header].source
        assert EXERCISE_HEADER.search(text), f"chapter {number}: header without its line: {text}"
        points = int(reading_time.EXERCISE_POINTS.search(text).group(1))
        assert points == chapter_cells[check].metadata["nbgrader"]["points"], text
        between = chapter_cells[header + 1 : check]
        assert not any(reading_time.EXERCISE.search(c.source) for c in between)


# how an exercise's text names each family its check refuses (attncourse.guard.CONCEPTS)
FAMILY_WORDS = {
    "softmax": ("softmax",),
    "attention": ("attention",),
    "entropy": ("entropy", "entr"),
    "autograd": ("autograd", "backward"),
    "layer_norm": ("layer_norm", "LayerNorm", "as in exercise"),
    "rms_norm": ("rms_norm", "RMSNorm", "as in exercise"),
    "batch_norm": ("batch_norm", "BatchNorm", "as in exercise"),
    "gradient_clipping": ("clip",),
}


def from_scratch_exercises(number):
    """(exercise heading, its text, the concepts its check re-implements) of a chapter."""
    checks = importlib.import_module(f"attncourse.exercises.ch{number}")
    found, text = [], ""
    for cell in nbformat.read(NOTEBOOKS[number], as_version=4).cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("### Exercise"):
            text = cell.source
        grade = cell.metadata.get("nbgrader", {}).get("grade")
        if cell.cell_type == "code" and grade:
            for name in sorted(set(re.findall(r"\b(check_\w+)\(", cell.source))):
                concepts = getattr(getattr(checks, name, None), "reimplements", ())
                if concepts:
                    found.append((text.splitlines()[0], text, concepts))
    return found


@pytest.mark.parametrize("number", CHAPTERS)
def test_a_from_scratch_exercise_says_what_its_check_refuses(number):
    exercises = from_scratch_exercises(number)
    for heading, text, concepts in exercises:
        assert "refuse" in text, f"{heading}: say what the check refuses"
        for concept in concepts:
            words = FAMILY_WORDS[concept]
            assert any(w.lower() in text.lower() for w in words), f"{heading}: name {concept}"


def test_chapter_00_states_what_any_answer_may_use():
    from attncourse.exercises import scan

    text = " ".join(
        c.source
        for c in nbformat.read(NOTEBOOKS["00"], as_version=4).cells
        if c.cell_type == "markdown"
    )
    text = " ".join(text.replace("#", " ").split())
    for module in scan.IMPORTABLE:
        assert re.search(rf"\b{module}\b", text), f"chapter 00 does not name {module}"
    for refused in ("attncourse", "getattr", "eval", "torch.ops", "torch.load", "import *"):
        assert refused in text, f"chapter 00 does not say that {refused} is refused"
    # every check refuses an answer that changes its inputs (engine.IN_PLACE): a rule for all
    assert "must not change its inputs in place" in text, "chapter 00 does not state the rule"


@pytest.mark.parametrize("number", CHAPTERS)
def test_the_appendix_keeps_every_claim_check(number):
    chapter_cells = cells(number)
    start = next(
        (i for i, c in enumerate(chapter_cells) if reading_time.APPENDIX.search(c.source)), None
    )
    assert start is not None, f"chapter {number} has no ## Appendix"
    rows = [row for row in claim_rows(number) if row.verdict or row.link]
    assert len(rows) >= CLAIM_ROWS[number], (
        f"chapter {number}: {len(rows)} claim rows, it had {CLAIM_ROWS[number]}"
    )


@pytest.mark.parametrize("number", CHAPTERS)
def test_the_summary_asks_check_yourself_questions_with_hidden_answers(number):
    markdown = [c.source for c in cells(number) if c.cell_type == "markdown"]
    start = next((i for i, text in enumerate(markdown) if "## Summary" in text), None)
    end = next((i for i, text in enumerate(markdown) if "## Appendix" in text), len(markdown))
    summary = "\n".join(markdown[start:end]) if start is not None else ""
    assert summary, f"chapter {number}: no ## Summary"
    assert "Check yourself" in summary and "<details>" in summary, (
        f"chapter {number}: the summary has no check-yourself questions with hidden answers"
    )


# --------------------------------------------------------------- one verdict per claim

KIND = {
    "def": "Def.",
    "definition": "Def.",
    "lemma": "Lemma",
    "thm": "Thm.",
    "theorem": "Thm.",
    "cor": "Cor.",
    "corollary": "Cor.",
    "app": "App.",
    "application": "App.",
    "alg": "Alg.",
    "algorithm": "Alg.",
    "eq": "Eq.",
}
CLAIM_ID = re.compile(
    r"\b(Def|Definition|Lemma|Thm|Theorem|Cor|Corollary|App|Application|Alg|Algorithm|Eq)\.?"
    r"\s*\(?(\d+\.\d+\.\d+)\)?",
    re.I,
)
VERDICTS = re.compile(r"[✓⚠✗]")
LINK = re.compile(r"→\s*(?:ch(?:apter|\.)?\s*)(\d\d)")
CELL_BORDER = re.compile(r"(?<!\\)\|")  # a table's column border; "\|" is a bar inside a cell
CLAIM_CHECK = re.compile(r"\*\*Claim check — ([^*]+?)\s*([✓⚠✗][^*]*)\*\*")


class Row:
    def __init__(self, number, claim, verdict_cell):
        self.number, self.claim = number, claim
        found = CLAIM_ID.search(claim)
        self.key = f"{KIND[found.group(1).lower()]} {found.group(2)}" if found else None
        self.verdict = "".join(VERDICTS.findall(verdict_cell))
        link = LINK.search(verdict_cell)
        self.link = link.group(1) if link else None


def claim_rows(number):
    """The rows of the chapter's claim tables: tables whose header's second column is
    'verdict'."""
    rows = []
    for cell in cells(number):
        if cell.cell_type != "markdown":
            continue
        in_table = False
        for line in cell.source.splitlines():
            columns = [c.strip() for c in CELL_BORDER.split(line.strip().strip("|"))]
            if not line.lstrip().startswith("|"):
                in_table = False
            elif len(columns) > 1 and columns[1].lower() == "verdict":
                in_table = True
            elif in_table and not set(columns[0]) <= set("-: "):
                rows.append(Row(number, columns[0], columns[1]))
    return rows


def owned_verdicts():
    """{claim id: {chapter: set of verdict strings}} over every concept-first chapter."""
    owners = {}
    for number in CHAPTERS:
        for row in claim_rows(number):
            if row.key and row.verdict and not row.link:
                owners.setdefault(row.key, {}).setdefault(number, set()).add(row.verdict)
    return owners


def test_each_claim_has_one_owner_and_one_verdict_across_the_course():
    owners = owned_verdicts()
    shared = {key: chapters for key, chapters in owners.items() if len(chapters) > 1}
    assert not shared, (
        "claims with verdicts in several chapters (let one chapter own each, the others link "
        f"to it with '→ ch. NN'): {shared}"
    )


def test_a_linked_claim_is_owned_by_the_chapter_it_links_to():
    owners = owned_verdicts()
    for number in CHAPTERS:
        for row in claim_rows(number):
            if row.link and row.key and row.link in CHAPTERS:
                assert row.link in owners.get(row.key, {}), (
                    f"chapter {number} links {row.key} to chapter {row.link}, which has no "
                    "verdict for it"
                )


@pytest.mark.parametrize("number", CHAPTERS)
def test_a_claim_check_in_the_text_agrees_with_the_claim_table(number):
    owners = owned_verdicts()
    text = "\n".join(c.source for c in cells(number) if c.cell_type == "markdown")
    for claim, verdict in CLAIM_CHECK.findall(text):
        found = CLAIM_ID.search(claim)
        if not found:
            continue
        key = f"{KIND[found.group(1).lower()]} {found.group(2)}"
        marks = "".join(VERDICTS.findall(verdict))
        table = owners.get(key, {})
        assert number in table, (
            f"chapter {number} gives {key} a verdict in its text but its claim table does not"
        )
        assert set(marks) <= set("".join(table[number])), (
            f"chapter {number}: {key} is {marks} in the text, {table[number]} in the table"
        )
