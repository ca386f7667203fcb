"""The Chinese edition from one source (attncourse.i18n): code cells identical across editions,
every chapter and check message translated and current, translations that keep the maths, code
and structure of the English, stale entries marked when the English changes, one glossary."""

import json
import re
from pathlib import Path

import nbformat
import pytest
import torch

from attncourse import exercises, i18n
from attncourse.exercises import engine

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LANGS = [code for code in i18n.LANGUAGES if code != "en"]


def _read(path):
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_translated_notebook_s_code_cells_are_the_english_ones_byte_for_byte(notebook, lang):
    english = _read(notebook)
    translated = i18n.translate(english, notebook, lang)
    assert len(translated.cells) == len(english.cells)
    for mine, theirs in zip(translated.cells, english.cells):
        assert mine.cell_type == theirs.cell_type and mine.metadata == theirs.metadata
        if mine.cell_type == "code":  # source, outputs, nbgrader metadata: the grader's input
            assert json.dumps(mine, sort_keys=True) == json.dumps(theirs, sort_keys=True)
    # the English run (nbval, the answer suites, the grader) therefore covers the translation


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_cell_of_a_chapter_is_translated_and_current(notebook, lang):
    left = i18n.status(notebook, lang)
    assert not left["missing"] and not left["stale"], (
        f"{notebook.stem}: {len(left['missing'])} cells without a {lang} translation, "
        f"{len(left['stale'])} stale (`python -m attncourse.i18n status {notebook.stem[:2]}`): "
        + "; ".join(left["missing"][:3] + left["stale"][:3])
    )


@pytest.mark.parametrize("lang", LANGS)
def test_every_check_message_is_translated_and_current(lang):
    left = i18n.messages_status(lang, exercises.messages())
    assert not left["missing"] and not left["stale"], (
        f"{len(left['missing'])} check messages without a {lang} translation, "
        f"{len(left['stale'])} stale: " + "; ".join(left["missing"][:3] + left["stale"][:3])
    )


def _catalogues(lang):
    paths = [i18n.catalogue_path(n, lang) for n in NOTEBOOKS] + [i18n.messages_path(lang)]
    return [p for p in paths if p.is_file()]


@pytest.mark.parametrize("lang", LANGS)
def test_a_translation_keeps_the_maths_code_links_and_structure_of_its_english(lang):
    problems = []
    for path in _catalogues(lang):
        for entry in i18n.polib.pofile(str(path)):
            if entry.msgstr and not entry.obsolete:
                for problem in i18n.mismatches(entry.msgid, entry.msgstr):
                    problems.append(f"{path.name}: {entry.msgid.splitlines()[0][:60]}: {problem}")
    assert not problems, "\n".join(problems[:10])


def test_mismatches_names_what_a_translation_changed():
    english = "## 2. Softmax\nUse `x.exp()` for $e^x$; see [ch. 01](01_a.ipynb).\n| a | b |"
    assert (
        i18n.mismatches(
            english,
            "## 2. 归一化\n用 `x.exp()` 计算 $e^x$；见 [第 01 章](01_a.ipynb)。\n| 甲 | 乙 |",
        )
        == []
    )
    found = i18n.mismatches(english, "### 2. 归一化\n用 `exp` 计算 $e^y$。")
    assert [f.split(" differ")[0] for f in found] == [
        "maths",
        "code",
        "links",
        "headings",
        "table rows",
    ]
    assert i18n.mismatches("{name} raised", "{name} 出错") == []
    assert i18n.mismatches("{name} raised", "函数出错") == [
        "fields differ: missing ['{name}'], extra []"
    ]


@pytest.fixture
def catalogues(tmp_path, monkeypatch):
    """The catalogues in a folder of their own, with a two-cell notebook to translate."""
    monkeypatch.setattr(i18n, "CATALOGUES", tmp_path / "i18n")
    notebook = tmp_path / "05_demo.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Chapter 05 · Demo\nA mask is a graph."),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("Two layers relay what one cannot reach."),
    ]
    nbformat.write(nb, notebook)
    return notebook


def test_update_adds_new_cells_marks_changed_ones_stale_and_retires_removed_ones(catalogues):
    notebook = catalogues
    assert i18n.update(notebook, "zh_CN") == {"new": 2, "stale": 0, "obsolete": 0, "kept": 0}
    po = i18n.load(notebook, "zh_CN")
    po[0].msgstr, po[1].msgstr = "# 第 05 章 · 演示\n掩码是一张图。", "两层能传递一层够不到的信息。"
    po.save(str(i18n.catalogue_path(notebook, "zh_CN")))
    assert i18n.status(notebook, "zh_CN") == {"missing": [], "stale": []}

    nb = _read(notebook)
    nb.cells[0].source = "# Chapter 05 · Demo\nA mask is a directed graph."  # a changed cell
    nb.cells[2].source = "Something else entirely, about positional encodings and rotations."
    nbformat.write(nb, notebook)
    assert i18n.update(notebook, "zh_CN") == {"new": 1, "stale": 1, "obsolete": 1, "kept": 0}
    left = i18n.status(notebook, "zh_CN")
    assert left == {
        "missing": ["Something else entirely, about positional encodings and rotations."],
        "stale": ["# Chapter 05 · Demo"],
    }
    stale = next(e for e in i18n.load(notebook, "zh_CN") if "fuzzy" in e.flags)
    assert stale.previous_msgid == "# Chapter 05 · Demo\nA mask is a graph."
    assert stale.msgstr.startswith("# 第 05 章")  # the old translation kept, for the translator
    translated = i18n.translate(_read(notebook), notebook, "zh_CN")
    assert translated.cells[0].source == nb.cells[0].source  # stale: shown in English
    assert translated.cells[1].source == "x = 1"


def test_an_unknown_language_is_refused_with_the_ones_there_are(catalogues):
    with pytest.raises(ValueError, match="unknown language 'fr'.*zh_CN"):
        i18n.load(catalogues, "fr")


def test_the_checks_speak_the_learner_s_language(monkeypatch):
    from attncourse.exercises.ch01 import WRONG_AXIS, check_softmax

    mistake = WRONG_AXIS  # a named mistake of the softmax check
    assert mistake in exercises.messages()
    translations = {mistake: "在错误的维度上求和", engine.WRONG: "{name}：{problem}\n  （{where}）"}
    monkeypatch.setattr(i18n, "_messages", lambda lang: translations)
    monkeypatch.setenv("ATTNCOURSE_LANG", "zh_CN")

    def wrong_axis(scores):  # a softmax over the first dimension
        e = (scores - scores.amax(dim=0, keepdim=True)).exp()
        return e / e.sum(dim=0, keepdim=True)

    with pytest.raises(AssertionError) as info:
        check_softmax(wrong_axis)
    assert str(info.value).startswith("wrong_axis：在错误的维度上求和")
    monkeypatch.setenv("ATTNCOURSE_LANG", "en")
    with pytest.raises(AssertionError, match=re.escape(f"wrong_axis: {WRONG_AXIS}")):
        check_softmax(wrong_axis)


# ------------------------------------------------------- what the checks fill in at run time

# the English of the engine's run-time fragments: the case, the inputs, the difference
ENGLISH_FRAGMENTS = (
    "case 1 of",
    "inputs:",
    "wrong values",
    "largest difference",
    "at index",
    "expected",
    "allowed",
    "tensor of shape",
    "a vector of 5 scores",
)


def _off_by_one_percent(scores):  # a softmax 1% too large: no named mistake, only a difference
    e = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True) * 1.01


def test_a_check_s_run_time_fragments_speak_the_learner_s_language(monkeypatch):
    from attncourse.exercises.ch01 import check_softmax

    monkeypatch.setenv("ATTNCOURSE_LANG", "zh_CN")
    with pytest.raises(AssertionError) as info:
        check_softmax(_off_by_one_percent)
    message = str(info.value)
    assert message.startswith("_off_by_one_percent：数值错误：最大差值 ")
    assert "（得到 " in message and "；允许误差 " in message
    assert "第 1/11 个用例：含 5 个分数的向量" in message  # the case and its label
    assert "输入：形状为 (5,) 的 torch.float32 张量" in message  # the inputs described
    assert not [english for english in ENGLISH_FRAGMENTS if english in message], message

    monkeypatch.setenv("ATTNCOURSE_LANG", "en")
    with pytest.raises(AssertionError) as info:
        check_softmax(_off_by_one_percent)
    message = str(info.value)
    assert message.startswith("_off_by_one_percent: wrong values: largest difference ")
    assert "case 1 of 11: a vector of 5 scores; inputs: a torch.float32 tensor of shape (5,)" in (
        message
    )


def test_a_label_s_numbers_drawn_at_run_time_are_filled_into_its_translation(monkeypatch):
    label = engine.Label("offset {k}, dim 8, base 10000", k=13)
    assert label == "offset 13, dim 8, base 10000" and label.template in exercises.messages()
    monkeypatch.setenv("ATTNCOURSE_LANG", "zh_CN")
    assert engine.label_text(label) == "偏移 13，维度 8，底数 10000"
    assert engine.label_text("a zero query") == "全零的查询"  # a label without numbers


def test_the_answer_scan_refuses_in_the_learner_s_language(monkeypatch):
    from attncourse.exercises import scan

    source = "import attncourse\n\ndef f(s):\n    return torch.softmax(s, -1) + s._x\n"
    english = scan.scan(source, ("softmax",), imports={"torch": "torch"})
    assert english == [
        "line 1 imports the course's own attncourse: write it yourself",
        "line 4 uses torch.softmax, which computes a softmax already: write it from plain "
        "tensor operations",
        "line 4 uses ._x: answers may not use private names (starting with _)",
    ]
    monkeypatch.setenv("ATTNCOURSE_LANG", "zh_CN")
    assert scan.scan(source, ("softmax",), imports={"torch": "torch"}) == [
        "第 1 行导入了课程自己的 attncourse：请自己实现",
        "第 4 行用了 torch.softmax，它本身就在计算 softmax：请用基本的张量运算实现",
        "第 4 行用了 ._x：答案不能使用私有名字（以 _ 开头）",
    ]


def _wrong_answers(value):
    """Wrong answers of many kinds for an answer like ``value``: None, a string, and for tensors
    values off by a lot and by a little, another dtype, NaN, another shape."""
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point():
            return [value + 1, value.double()]
        other = torch.float32 if value.dtype == torch.float64 else torch.float64
        return [
            value * 1.5 + 0.1,
            value + 1e-6 * value.abs().clamp(min=1.0),
            value.to(other),
            torch.full_like(value, float("nan")),
            torch.full_like(value, float("inf")),
            value.flatten()[:1],
        ]
    if isinstance(value, tuple):
        return [
            value[:1],
            *((wrong, *value[1:]) for wrong in _wrong_answers(value[0])),
        ]
    if isinstance(value, int | float):
        return [value + 1, value * 1.5, float("nan")]
    return []


def test_every_sentence_the_checks_say_is_collected_for_translation(monkeypatch):
    """Whatever a check says while it judges wrong answers of many kinds (the engine's
    fragments, every case's label, every hint function's sentences, the named mistakes) is a
    text of ``exercises.messages()``, so ``update_messages`` gives it an entry to translate."""
    import importlib

    asked = set()

    class Recording(dict):
        def get(self, key, default=None):
            asked.add(key)
            return default

    monkeypatch.setattr(i18n, "_messages", lambda lang: Recording())
    monkeypatch.setenv("ATTNCOURSE_LANG", "zh_CN")
    for number in range(11):
        module = importlib.import_module(f"attncourse.exercises.ch{number:02d}")
        for exercise in [v for v in vars(module).values() if isinstance(v, engine.Exercise)]:
            for case in exercise.inputs(0):
                engine.label_text(case.label)
                expected = exercise.expected(case)
                for got in [None, "text", *_wrong_answers(expected)]:
                    exercise.verdict(case, got, expected)
    assert len(asked) > 300
    assert not asked - set(exercises.messages()), sorted(asked - set(exercises.messages()))[:5]


# ------------------------------------------------------------------------------- widgets


def _has_cjk(text: str) -> bool:
    return any(i18n._is_cjk(char) for char in text)


def _widgets():
    """The widgets that need no trained model, by chapter: (name, a function that builds one)."""
    from attncourse.chapters import ch01_attention_as_selection as ch01
    from attncourse.chapters.ch03_entropy_and_temperature import widget as ch03
    from attncourse.chapters.ch04_gradient_paths import widget as ch04
    from attncourse.chapters.ch07_positional_encoding import widget as ch07
    from attncourse.chapters.ch08_residual_highway_normalization import widget as ch08
    from attncourse.chapters.ch10_efficient_gated_attention import widget as ch10

    return {
        "01": ch01.selection_widget,
        "03": ch03.entropy_widget,
        "04": ch04.gradient_widget,
        "07": ch07.encoding_widget,
        "08": ch08.depth_widget,
        "10": ch10.sparsity_widget,
    }


MATHS_LABELS = {"|q|", "d_k"}  # a label that is a symbol only reads the same in every language
CODE_OPTIONS = {"linear", "tanh", "relu", "rope", "alibi", "LayerNorm", "RMSNorm", "BatchNorm"}


@pytest.mark.parametrize("chapter", ["01", "03", "04", "07", "08", "10"])
def test_a_chinese_workspace_s_widgets_speak_chinese(chapter, monkeypatch):
    monkeypatch.setenv("ATTNCOURSE_LANG", "zh_CN")
    box = _widgets()[chapter]()
    for name, control in box.controls.items():
        assert control.description in MATHS_LABELS or _has_cjk(control.description), name
        for label in getattr(control, "_options_labels", ()):  # toggles and drop-downs
            words = label.strip("0123456789., ")
            assert not words or label in CODE_OPTIONS or _has_cjk(label), (name, label)
    caption = box.children[-2].value  # the numbers beside the figure
    assert _has_cjk(caption), caption

    monkeypatch.setenv("ATTNCOURSE_LANG", "en")  # an English workspace stays English
    box = _widgets()[chapter]()
    texts = [c.description for c in box.controls.values()] + [box.children[-2].value]
    assert not [text for text in texts if _has_cjk(text)]


def test_every_widget_label_is_said_in_the_learner_s_language():
    """No widget in the chapters (nor ``attncourse.viz``) has a label of English words written
    in its code: each goes through ``say`` (a label of numbers and symbols, ``d_k``, needs none)."""
    import ast

    files = sorted((ROOT / "attncourse" / "chapters").rglob("*.py"))
    found = []
    for path in [*files, ROOT / "attncourse" / "viz.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for keyword in getattr(node, "keywords", ()) if isinstance(node, ast.Call) else ():
                if keyword.arg not in ("description", "tooltip"):
                    continue
                value = keyword.value
                parts = [value] if isinstance(value, ast.Constant) else []
                if isinstance(value, ast.JoinedStr):
                    parts = [v for v in value.values if isinstance(v, ast.Constant)]
                if any(re.search("[A-Za-z]{2,}", str(part.value)) for part in parts):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


# ---------------------------------------------------------------------------- the glossary


def test_the_glossary_gives_each_term_one_translation():
    lines = [
        line.split("\t")
        for line in i18n.GLOSSARY.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    english = [e for e, _ in lines]
    assert len(english) == len(set(english)), [e for e in english if english.count(e) > 1]
    assert all(c.strip() for _, c in lines)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_chapter_s_glossary_lines_come_from_the_glossary(notebook):
    terms = i18n.glossary()
    for english, chinese in i18n.glossary_lines(_read(notebook)):
        assert terms.get(english) == chinese, (
            f"{notebook.stem}: {english} {chinese}, but the glossary says {terms.get(english)}"
        )


_TERM_LINE = re.compile(r"\*\*术语\*\*\s*·(.+)")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_translated_glossary_line_uses_the_glossary_s_terms(notebook):
    """``> **术语** · 加权平均 weighted average · ...``: each Chinese term is the glossary's."""
    terms = i18n.glossary()
    translated = i18n.translate(_read(notebook), notebook, "zh_CN")
    found = 0
    for cell in translated.cells:
        if cell.cell_type != "markdown":
            continue
        for block in cell.source.split("\n\n"):
            text = " ".join(line.removeprefix(">").strip() for line in block.splitlines())
            match = _TERM_LINE.search(text)
            if not match:
                continue
            for item in match.group(1).split(" · "):
                item = item.split(" (")[0].split("（")[0].strip()
                english = re.sub(r"^[^A-Za-z]*", "", item).strip()
                chinese = item[: len(item) - len(english)].strip() if english else item
                if english in terms:
                    found += 1
                    assert chinese == terms[english], (
                        f"{notebook.stem}: {english} is {chinese} here, {terms[english]} in the "
                        "glossary"
                    )
    english_terms = i18n.glossary_lines(_read(notebook))
    if english_terms and not i18n.status(notebook, "zh_CN")["missing"]:
        assert found >= len(english_terms) // 2, f"{notebook.stem}: glossary lines not translated"


# ------------------------------------------------------------------------- chapter titles


def _title(nb) -> str:
    """A chapter's title: its first heading less "# Chapter NN · " (or "# 第 NN 章 · ")."""
    return nb.cells[0].source.splitlines()[0].split(" · ", 1)[1].strip()


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_the_chapter_map_names_every_chapter_as_its_heading_does(lang):
    def edition(path):
        nb = _read(path)
        return nb if lang == "en" else i18n.translate(nb, path, lang)

    rows = {}
    for cell in edition(NOTEBOOKS[0]).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                match = re.match(r"\|\s*(\d\d)\s*\|\s*([^|]+?)\s*\|", line)
                if match:
                    rows[match[1]] = match[2]
    titles = {path.stem[:2]: _title(edition(path)) for path in NOTEBOOKS}
    assert rows == titles
    if lang == "en":  # the README's table of chapters too
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        listed = dict(re.findall(r"^\| (\d\d) \| ([^|]+?) \| \[", readme, re.M))
        assert listed == titles
