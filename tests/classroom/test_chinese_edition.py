"""The Chinese edition through the classroom commands: `release --lang zh_CN` gives Chinese student
copies, a Chinese submission grades exactly like the English one and gets its notes and report in
Chinese (an English one in English), `start --lang zh_CN` makes a Chinese workspace whose checks
speak Chinese, and the site carries both editions with a switch on every page."""

import json
import shutil

import pytest
from classroom_helpers import CHAPTERS, cli, read, sandbox_or_skip, with_answers

from attncourse import i18n
from attncourse.classroom import feedback
from attncourse.classroom.grade import grade

CHAPTER = next((p for p in CHAPTERS if p.name.startswith("01_")), None)


def _markdown(nb):
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


@pytest.fixture(scope="module")
def chinese_release(tmp_path_factory):
    if CHAPTER is None:
        pytest.skip("no chapter 01 in notebooks/")
    out = tmp_path_factory.mktemp("release-zh")
    status, stdout, stderr = cli("release", str(CHAPTER), "--out", out, "--lang", "zh_CN")
    assert status == 0, stderr
    return out / CHAPTER.name


def test_a_chinese_release_is_the_english_release_with_its_markdown_translated(
    chinese_release, released
):
    chinese, english = read(chinese_release), read(released[CHAPTER.name])
    expected = i18n.translate(read(CHAPTER), CHAPTER, "zh_CN")
    assert _markdown(chinese) == [
        m for m in _markdown(expected) if m in _markdown(chinese)
    ] and _markdown(chinese)[0].startswith("# 第 01 章")
    assert [c.source for c in chinese.cells if c.cell_type == "code"] == [
        c.source for c in english.cells if c.cell_type == "code"
    ]
    assert [c.metadata for c in chinese.cells] == [c.metadata for c in english.cells]


def test_a_chinese_submission_grades_exactly_like_the_english_one(
    chinese_release, released, tmp_path
):
    sandbox_or_skip()
    full_chinese = tmp_path / "full-zh.ipynb"  # the instructor's answers, in Chinese
    nb = i18n.translate(read(CHAPTER), CHAPTER, "zh_CN")
    full_chinese.write_text(json.dumps(nb), encoding="utf-8")
    submissions = {
        ("ada", "full"): full_chinese,
        ("ada", "blank"): chinese_release,
        ("bob", "full"): CHAPTER,
        ("bob", "blank"): released[CHAPTER.name],
    }
    paths = []
    for (student, kind), source in submissions.items():
        folder = tmp_path / "submitted" / f"{student}-{kind}" / CHAPTER.stem
        folder.mkdir(parents=True)
        paths.append(shutil.copyfile(source, folder / CHAPTER.name))
    results = {
        r.student: r for r in grade(paths, source=CHAPTER.parent, jobs=2, echo=lambda _: None)
    }
    for kind in ("full", "blank"):
        chinese, english = results[f"ada-{kind}"], results[f"bob-{kind}"]
        assert [(e.grade_id, e.points, e.max_points) for e in chinese.exercises] == [
            (e.grade_id, e.points, e.max_points) for e in english.exercises
        ]
    assert results["ada-full"].points == results["ada-full"].max_points > 0
    assert results["ada-blank"].points == 0


# answers whose notes the grader fills in at run time: a wrong value (the case, its label and the
# difference), a refused built-in (the reading's rule); a right one; the others left blank
ANSWERS = {
    "ch01_weighted_average": (
        "def my_weighted_average(weights, values):\n    return weights @ values + 0.001\n"
    ),
    "ch01_softmax": "def my_softmax(scores):\n    return torch.softmax(scores, dim=-1)\n",
    "ch01_entropy": (
        "def my_entropy(weights):\n"
        "    safe = torch.where(weights > 0, weights, torch.ones_like(weights))\n"
        "    return -(weights * torch.log(safe)).sum(dim=-1)\n"
    ),
}
# the English the engine and the grader write, which a Chinese report must not show
ENGLISH_NOTES = (
    "case ",
    "wrong values",
    "largest difference",
    "expected",
    "must be written from scratch",
    "uses torch.softmax",
    "which computes",
    "is not implemented",
    "a vector of",
)


@pytest.fixture(scope="module")
def graded_in_both(chinese_release, released, tmp_path_factory):
    """The same wrong answers in a Chinese and an English student copy, graded together:
    {"zh_CN": result, "en": result}."""
    sandbox_or_skip()
    folder = tmp_path_factory.mktemp("submitted") / "submitted"
    paths = {
        "zh_CN": with_answers(chinese_release, folder / "ada" / CHAPTER.stem, ANSWERS),
        "en": with_answers(released[CHAPTER.name], folder / "bob" / CHAPTER.stem, ANSWERS),
    }
    results = grade(list(paths.values()), source=CHAPTER.parent, jobs=2, echo=lambda _: None)
    return {lang: next(r for r in results if r.submission == str(p)) for lang, p in paths.items()}


def _notes(result):
    return {e.grade_id: e.note for e in result.exercises}


def test_a_chinese_submission_s_notes_are_chinese_with_the_numbers_filled_in(graded_in_both):
    chinese, english = graded_in_both["zh_CN"], graded_in_both["en"]
    assert chinese.language == "zh_CN" and english.language == "en"
    assert [e.points for e in chinese.exercises] == [e.points for e in english.exercises]
    notes = _notes(chinese)
    average = notes["ch01_weighted_average_test"]
    assert average.startswith("my_weighted_average：数值错误：最大差值 "), average
    assert "（第 1/" in average and "个用例：" in average  # the case, its label in Chinese
    assert notes["ch01_softmax_test"] == (
        "my_softmax 必须从零实现：第 2 行用了 torch.softmax，它本身就在计算 softmax：请用基本的"
        "张量运算实现"
    )
    assert notes["ch01_entropy_test"] == ""  # full marks
    assert notes["ch01_scaled_scores_test"] == "my_scaled_scores 还没有实现"
    assert not [(note, w) for note in notes.values() for w in ENGLISH_NOTES if w in note]

    notes = _notes(english)  # the English submission stays English
    assert notes["ch01_weighted_average_test"].startswith(
        "my_weighted_average: wrong values: largest difference "
    )
    assert "(case 1 of " in notes["ch01_weighted_average_test"]
    assert notes["ch01_softmax_test"] == (
        "my_softmax must be written from scratch: line 2 uses torch.softmax, which computes a "
        "softmax already: write it from plain tensor operations"
    )
    assert notes["ch01_scaled_scores_test"] == "my_scaled_scores is not implemented yet"
    assert not [note for note in notes.values() if any(map(i18n._is_cjk, note))]


def test_a_chinese_submission_s_report_is_chinese_and_an_english_one_english(graded_in_both):
    chinese = feedback.render(graded_in_both["zh_CN"])
    assert "<html lang='zh-CN'>" in chinese
    for words in (
        "<th>练习</th><th>得分</th><th>检查的反馈</th>",
        "✓ 全部检查通过",
        " 分</strong>",
    ):
        assert words in chinese, words
    assert "数值错误" in chinese and "还没有实现" in chinese  # the notes, in Chinese too
    assert "<td>练习 1 · 一次算出所有加权平均</td>" in chinese  # the exercise's Chinese heading
    assert "ch01_weighted_average_test" not in chinese
    for words in ("what the check said", "all checks passed", "points</strong>", "wrong values"):
        assert words not in chinese, words

    english = feedback.render(graded_in_both["en"])
    assert "<html lang='en'>" in english and "<th>what the check said</th>" in english
    assert "✓ all checks passed" in english and " points</strong>" in english
    assert "<td>Exercise 1 · All the weighted averages at once</td>" in english
    assert not any(map(i18n._is_cjk, english))


@pytest.mark.parametrize(
    ("lang", "words"),
    [("zh_CN", "它本身就在计算 softmax"), ("en", "was called: it computes a softmax already")],
)
def test_the_sandbox_refuses_a_built_in_in_the_submission_s_language(lang, words):
    """What the sandbox's process refuses at run time (the guard's message) is said in the
    language the grader gives it (``Session(lang=...)``, its ATTNCOURSE_LANG)."""
    import torch

    from attncourse.classroom import protocol
    from attncourse.classroom.sandbox import Session

    sandbox_or_skip()
    arrays = {}
    call = {
        "args": protocol.encode((torch.zeros(2, 3),), arrays, pickle=True),
        "kwargs": protocol.encode([], arrays, pickle=True),
    }
    with Session(sandbox=True, lang=lang) as session:
        session.request({"op": "run", "source": "import torch\nf = lambda s: torch.softmax(s, -1)"})
        header = {"op": "calls", "function": "f", "calls": [call], "concepts": ["softmax"]}
        answer, _ = session.request(header, arrays)
    (result,) = answer["results"]
    assert result["refused"] and words in result["error"], result


def test_start_in_chinese_makes_a_chinese_workspace_and_sets_the_checks_language(tmp_path):
    if CHAPTER is None:
        pytest.skip("no chapter 01 in notebooks/")
    source = tmp_path / "source"
    source.mkdir()
    shutil.copyfile(CHAPTER, source / CHAPTER.name)
    workspace = tmp_path / "workspace"
    status, stdout, stderr = cli(
        "start", "--workspace", workspace, "--source", source, "--lang", "zh_CN", "--dry-run"
    )
    assert status == 0, stderr
    assert "ATTNCOURSE_LANG=zh_CN" in stdout and not workspace.exists()  # a dry run
    status, stdout, stderr = cli(
        "release", "--out", workspace, "--source", source, "--lang", "zh_CN"
    )
    assert status == 0, stderr
    assert _markdown(read(workspace / CHAPTER.name))[0].startswith("# 第 01 章")


def test_an_unknown_language_is_bad_input():
    status, _, stderr = cli("release", "--out", "x", "--lang", "fr")
    assert status == 2 and "invalid choice: 'fr'" in stderr
