"""The Chinese edition through the classroom commands: `release --lang zh_CN` gives Chinese student
copies, a Chinese submission grades exactly like the English one, `start --lang zh_CN` makes a
Chinese workspace whose checks speak Chinese, and the site carries both editions with a switch on
every page."""

import json
import shutil

import pytest
from classroom_helpers import CHAPTERS, cli, read, sandbox_or_skip

from attncourse import i18n
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
