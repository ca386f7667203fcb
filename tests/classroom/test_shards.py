"""`attncourse grade --shard K/N` and `attncourse merge`: a class graded in shards, each given the
whole batch, and merged, writes what grading it whole writes (the CSV byte for byte, the same
JSON but for the seconds each took, the same feedback reports), and a merge refuses shards that
are missing, given twice or cut from different batches.
"""

import contextlib
import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from classroom_helpers import (
    AVERAGE,
    FIXTURE,
    FIXTURES,
    HONEST_AVERAGE,
    HONEST_SOFTMAX,
    SOFTMAX,
    cli,
    run,
    sandbox_or_skip,
    with_answers,
)

from attncourse.classroom.grade import Shard, _cut

FULL = {SOFTMAX: HONEST_SOFTMAX, AVERAGE: HONEST_AVERAGE}
STUDENTS = {  # id -> answers; the points they earn (of 3)
    "gus": (FULL, 3),
    "ben": ({}, 0),
    "cy": ({SOFTMAX: HONEST_SOFTMAX}, 2),
    "=eve": (FULL, 3),  # a formula, shown as text in every shard alike
    "fay": (FULL, 0),  # saved under another name: not graded, a row all the same
}
SHARDS = 3
BATCH = Path(__file__).resolve().parents[2] / "deploy" / "batch"
BIN = Path(sys.executable).parent  # where the attncourse command is


def _batch(root, release):
    paths = []
    for student, (answers, _) in STUDENTS.items():
        path = with_answers(release, root / "submitted" / student / "ps1", answers)
        if student == "fay":
            path = path.rename(path.with_name(f"{FIXTURE.stem}-Copy1.ipynb"))
        paths.append(path)
    (root / "submitted" / "gus" / "ps1" / "timestamp.txt").write_text("2024-05-30 13:52:29 UTC")
    return paths


def _outputs(folder):
    return ["--csv", folder / "grades.csv", "--json", folder / "grades.json",
            "--feedback", folder / "feedback"]  # fmt: skip


def _job_script() -> str:
    """The shell script each pod of the Kubernetes Indexed Job runs."""
    job = next(yaml.safe_load_all((BATCH / "grade-job.yaml").read_text()))
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["bash", "-c"]
    return container["args"][0]


def _run(command, root, **env):
    """A batch script in the course directory ``root``, as the cluster runs it."""
    path = f"{BIN}{os.pathsep}{os.environ['PATH']}"
    return run(command, root, timeout=600, env={**os.environ, "PATH": path, **env})


@pytest.fixture(scope="module")
def graded(released, tmp_path_factory):
    """The batch graded whole, then in three shards by deploy/batch's scripts (shards 0 and 1 as
    tasks of the Slurm array, shard 2 as a pod of the Kubernetes Indexed Job) and merged (by the
    Slurm script's merge job)."""
    sandbox_or_skip()
    root = tmp_path_factory.mktemp("sharded")
    paths = _batch(root, released[FIXTURE.name])
    options = ["--source", FIXTURES, "--timeout", "30"]
    whole = root / "whole"
    whole.mkdir()
    # the batch as the scripts name it: the shell's submitted/*/ps1/*.ipynb, from the course
    listed = _run(["bash", "-c", "printf '%s\\n' submitted/*/ps1/*.ipynb"], root).stdout.split()
    assert len(listed) == len(paths)
    with contextlib.chdir(root):
        status, out, err = cli("grade", *listed, "-j", "2", *options, *_outputs(whole))
    assert status == 0, err
    array = {"SLURM_ARRAY_TASK_COUNT": str(SHARDS), "SLURM_CPUS_PER_TASK": "2"}
    for k in (0, 1):
        done = _run(["bash", BATCH / "slurm.sh", "ps1", *options], root,
                    SLURM_ARRAY_TASK_ID=str(k), **array)  # fmt: skip
        assert f"shard {k}/{SHARDS}:" in done.stderr
    job = {"ASSIGNMENT": "ps1", "SHARDS": str(SHARDS), "JOB_COMPLETION_INDEX": "2"}
    done = _run(["bash", "-c", _job_script()], root,
                GRADE_OPTIONS=f"-j 2 {' '.join(map(str, options))}", **job)  # fmt: skip
    assert f"shard 2/{SHARDS}:" in done.stderr
    shards = [root / "grades" / "ps1" / f"shard-{k}.json" for k in range(SHARDS)]
    done = _run(["bash", BATCH / "slurm.sh", "ps1"], root)  # the merge: no array task id
    assert f"merged {SHARDS} shards: {len(STUDENTS)} submissions" in done.stdout
    merged = root / "merged"
    merged.mkdir()
    for name in ("grades.csv", "grades.json"):
        (root / "grades" / "ps1" / name).rename(merged / name)
    (root / "feedback").rename(merged / "feedback")
    return paths, whole, shards, merged


def _without_seconds(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    for submission in data["submissions"]:
        submission.pop("seconds")
    return data


def test_the_merged_shards_write_what_grading_the_class_whole_writes(graded):
    _, whole, _, merged = graded
    table = (whole / "grades.csv").read_bytes()
    assert (merged / "grades.csv").read_bytes() == table
    rows = [line.split(",") for line in table.decode().splitlines()[1:]]
    assert {row[0]: int(row[-3]) for row in rows} == {
        ("'" + s if s.startswith("=") else s): points for s, (_, points) in STUDENTS.items()
    }
    assert _without_seconds(merged / "grades.json") == _without_seconds(whole / "grades.json")
    reports = sorted(p.relative_to(whole / "feedback") for p in whole.rglob("*.html"))
    assert len(reports) == len(STUDENTS)
    assert reports == sorted(p.relative_to(merged / "feedback") for p in merged.rglob("*.html"))
    for report in reports:
        assert (merged / "feedback" / report).read_bytes() == (
            whole / "feedback" / report
        ).read_bytes()


def test_each_student_is_in_exactly_one_shard_and_the_shards_are_even(graded):
    _, _, shards, _ = graded
    students = [[s["student"] for s in json.loads(p.read_text())["submissions"]] for p in shards]
    assert sorted(s for shard in students for s in shard) == sorted(STUDENTS)
    assert max(map(len, students)) - min(map(len, students)) <= 1
    ordered = sorted(STUDENTS)  # every N-th of the sorted ids from the K-th
    assert [sorted(shard) for shard in students] == [ordered[k::SHARDS] for k in range(SHARDS)]


def test_the_split_depends_on_the_students_only_and_keeps_a_student_together():
    tasks = [
        {"student": s, "assignment": a, "notebook": "n.ipynb"}
        for a in ("ps1", "ps2")
        for s in ("zoe", "al", "bo", "al\x7f")
    ]
    cut = [_cut(tasks, Shard(k, 3)) for k in range(3)]
    assert [sorted({t["student"] for t in c}) for c in cut] == [["al", "zoe"], ["al\x7f"], ["bo"]]
    assert all(len(c) == 2 * len({t["student"] for t in c}) for c in cut)  # both assignments
    again = Shard(1, 3)
    assert _cut(list(tasks), again) == cut[1] and again.positions == [3, 7]
    assert _cut(tasks, Shard(5, 9)) == []  # more shards than students: some are empty


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("4/3", "K counts from 0 to N-1, so the shards of 3 are 0/3 to 2/3"),
        ("3/3", "K counts from 0 to N-1"),
        ("0/0", "N, the number of shards, must be at least 1"),
        ("1-3", "expected K/N"),
        ("one/3", "expected K/N"),
    ],
)
def test_a_shard_that_does_not_exist_is_refused_before_anything_is_graded(text, words, tmp_path):
    status, _, err = cli("grade", tmp_path / "x.ipynb", "--shard", text, "--json", tmp_path / "j")
    assert status == 2 and words in err, err
    assert "Traceback" not in err


def test_a_shard_writes_json_for_the_merge(tmp_path):
    status, _, err = cli("grade", tmp_path / "x.ipynb", "--shard", "0/2")
    assert status == 2 and "--shard 0/2 needs --json FILE" in err, err


def test_an_empty_shard_writes_an_empty_part(released, tmp_path):
    paths = _batch(tmp_path, released[FIXTURE.name])
    part = tmp_path / "part.json"
    status, _, err = cli("grade", *paths, "--source", FIXTURES, "--shard", "9/10", "--json", part)
    assert status == 0, err
    data = json.loads(part.read_text())
    assert data["submissions"] == [] and data["shard"]["students"] == len(STUDENTS)


def _copy(shard, tmp_path, name, change):
    data = json.loads(shard.read_text())
    change(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_a_merge_refuses_missing_repeated_foreign_or_whole_parts(graded, tmp_path):
    _, whole, shards, _ = graded

    def refused(*parts):
        status, _, err = cli("merge", *parts, "--csv", tmp_path / "g.csv")
        assert status == 2, err
        assert not (tmp_path / "g.csv").exists()
        return err

    assert "shard 1/3 of this batch is missing" in refused(shards[0], shards[2])
    assert "shards 1/3, 2/3 of this batch are missing" in refused(shards[0])
    err = refused(*shards, shards[1])
    assert f"shard 1/3 is given twice: {shards[1]} and {shards[1]}" in err
    assert "graded whole, not as a shard" in refused(*shards, whole / "grades.json")

    def other_batch(data):
        data["shard"]["batch"] = "0" * 64

    foreign = _copy(shards[2], tmp_path, "foreign.json", other_batch)
    assert "were cut from different batches" in refused(shards[0], shards[1], foreign)

    def four(data):
        data["shard"]["count"] = 4

    assert "the shards of one batch share N" in refused(
        shards[0], _copy(shards[1], tmp_path, "four.json", four), shards[2]
    )

    def overlapping(data):  # shard 2 claiming a place shard 0 holds
        data["shard"]["positions"][0] = json.loads(shards[0].read_text())["shard"]["positions"][0]

    err = refused(shards[0], shards[1], _copy(shards[2], tmp_path, "overlap.json", overlapping))
    assert "overlaps" in err
    assert "no such file" in refused(tmp_path / "absent.json")
    (tmp_path / "broken.json").write_text("{")
    assert "not the JSON of attncourse grade" in refused(tmp_path / "broken.json")
