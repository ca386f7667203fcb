"""`attncourse course`: an instructor's nbgrader course directory, the one nbgrader's own commands
(generate_assignment, release_assignment, collect) run in on a JupyterHub."""

import subprocess
import sys

from classroom_helpers import CHAPTERS, FIXTURE, FIXTURES, cli

from attncourse.classroom.instructor import assignment_id


def _exchange(tmp_path):
    exchange = tmp_path / "exchange"
    exchange.mkdir(mode=0o777)
    exchange.chmod(0o777)  # whatever the umask
    return exchange


def test_the_course_directory_holds_nbgrader_s_settings_and_one_assignment_per_chapter(tmp_path):
    exchange, course = _exchange(tmp_path), tmp_path / "course"
    status, out, err = cli(
        "course", "--out", course, "--exchange", exchange, "--course-id", "att-1"
    )
    assert status == 0, err
    for chapter in CHAPTERS:
        copy = course / "source" / assignment_id(chapter) / chapter.name
        assert copy.read_bytes() == chapter.read_bytes()
    assert assignment_id(CHAPTERS[1]) == "ch01"
    assert "nbgrader generate_assignment ch00 && nbgrader release_assignment ch00" in out
    # nbgrader itself reads the settings from inside the folder
    read = subprocess.run(
        [sys.executable, "-c",
         "from nbgrader.apps.nbgraderapp import NbGraderApp; app = NbGraderApp(); "
         "app.initialize([]); c = app.config; "
         "print(c.CourseDirectory.root, c.CourseDirectory.course_id, c.Exchange.root)"],
        cwd=course, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr[-2000:]
    assert read.stdout.split() == [str(course), "att-1", str(exchange)]


def test_an_instructor_s_own_edit_is_kept_unless_forced(tmp_path):
    exchange, course = _exchange(tmp_path), tmp_path / "course"
    args = ("course", FIXTURE, "--out", course, "--exchange", exchange)
    assert cli(*args)[0] == 0
    source = course / "source" / "ch99" / FIXTURE.name
    source.write_text("{}")
    status, out, err = cli(*args)
    assert status == 0, err
    assert f"kept       {source}" in out and source.read_text() == "{}"
    assert f"up to date {course / 'nbgrader_config.py'}" in out
    status, out, err = cli(*args, "--force")
    assert status == 0 and f"overwrote  {source}" in out, err
    assert source.read_bytes() == FIXTURE.read_bytes()
    assert [p.read_text() for p in (course / ".attncourse-backup").iterdir()] == ["{}"]


def test_a_missing_exchange_or_a_bad_course_id_is_refused_with_the_fix(tmp_path):
    course = tmp_path / "course"
    status, _, err = cli("course", "--out", course, "--exchange", tmp_path / "none", "--source",
                         FIXTURES)  # fmt: skip
    assert status == 2 and f"chmod 0777 {tmp_path / 'none'}" in err and "does not exist" in err
    status, _, err = cli("course", "--out", course, "--exchange", "relative", "--source", FIXTURES)
    assert status == 2 and "give an absolute path" in err
    exchange = _exchange(tmp_path)
    status, _, err = cli("course", "--out", course, "--exchange", exchange, "--course-id", "a b")
    assert status == 2 and "--course-id 'a b'" in err
    assert not course.exists()


def test_an_exchange_only_its_owner_can_write_is_named_but_allowed(tmp_path):
    """One user's exchange keeps students who are other users out; on Kubernetes, where every
    server runs as one user, it is how the volume comes."""
    private = tmp_path / "private"
    private.mkdir(mode=0o755)
    private.chmod(0o755)
    course = tmp_path / "course"
    status, _, err = cli("course", "--out", course, "--exchange", private, "--source", FIXTURES)
    assert status == 0, err
    assert "not writable by every user (mode 755)" in err and f"chmod 0777 {private}" in err
    assert (course / "nbgrader_config.py").is_file()
