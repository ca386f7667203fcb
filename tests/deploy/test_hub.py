"""A class on JupyterHub, end to end, on this machine, following deploy/README.md's steps for one
machine: system users for an instructor and three students, nbgrader's exchange, the hub run as
root with deploy/jupyterhub_config.py and deploy/jupyter/, the instructor's course directory made
by `attncourse course`, chapter 01 released through nbgrader's exchange, each student's server
spawned through the hub's REST API, the student's fetch, answers (all, half, none) and submit
through that server's own REST handlers, as JupyterLab's Assignments tab calls them; then the
instructor collects and grades with `attncourse grade`, and the CSV has the three students with
the points their answers earn.

It creates system users and runs a hub as root, so it runs only as root under CI=true (CI runs
as root) and is skipped elsewhere. Everything it starts it stops, and everything it made it
removes (servers, hub, proxy, users, files), whatever happens; it has a deadline of its own, so
it can never hang the suite. The course is the test environment's own install (step 2 of the
README installs it into /opt/attncourse instead).
"""

import contextlib
import csv
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from attncourse.classroom import assignment
from attncourse.classroom.instructor import assignment_id

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CHAPTER = ROOT / "notebooks" / "01_attention_as_selection.ipynb"
BIN = Path(sys.executable).parent
DEADLINE = 420  # seconds for the whole class; about 80 on 2 quiet cores
COURSE_ID = "attention"


def _why_not() -> str | None:
    if os.environ.get("CI") != "true":
        return "it creates system users and runs a JupyterHub as root: only under CI=true"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "it creates system users and runs a JupyterHub: only as root"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def _needs():
    """What CI must have: a missing piece fails the test, naming it."""
    missing = [tool for tool in ("configurable-http-proxy", "useradd", "userdel", "runuser")
               if shutil.which(tool) is None]  # fmt: skip
    assert not missing, (
        f"{', '.join(missing)} not found: .ci/run installs configurable-http-proxy with npm "
        "(apt-get install npm; npm install -g configurable-http-proxy)"
    )


class Deadline:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def left(self, most: float = 1e9) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            pytest.fail(f"the class did not finish within {self.seconds} s")
        return min(left, most)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Class:
    """The users, folders and processes of one class; ``close`` removes every one of them."""

    def __init__(self, deadline: Deadline):
        self.deadline = deadline
        self.prefix = f"ac{secrets.token_hex(3)}"  # user names no one else has
        self.instructor = f"{self.prefix}-teach"
        self.students = [f"{self.prefix}-{name}" for name in ("ada", "ben", "cy")]
        self.users: list[str] = []
        self.folder = Path(tempfile.mkdtemp(prefix="attncourse-hub-", dir="/tmp"))
        self.folder.chmod(0o755)  # the users' servers read the settings in it
        self.hub: subprocess.Popen | None = None
        self.hub_log = self.folder / "hub.log"
        self.timings: dict[str, float] = {}
        self.token = secrets.token_hex(24)
        self.base = ""
        self.threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ setting up

    def add_users(self):
        """Step 3: an account for the instructor and each student."""
        for user in [self.instructor, *self.students]:
            done = subprocess.run(
                ["useradd", "--create-home", "--shell", "/bin/bash", user],
                capture_output=True, text=True, timeout=self.deadline.left(60),
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            self.users.append(user)

    def as_instructor(self, *command, timeout=120) -> str:
        """A command in the instructor's course directory, as a terminal of their server runs it."""
        home = Path(pwd.getpwnam(self.instructor).pw_dir)
        env = [f"PATH={BIN}:/usr/local/bin:/usr/bin:/bin", f"HOME={home}", "LANG=C.UTF-8",
               f"USER={self.instructor}"]  # fmt: skip
        cwd = home / "course" if (home / "course").is_dir() else home
        shown = " ".join(map(str, command))
        process = subprocess.Popen(  # a session of its own: on a timeout, all of it is killed
            ["runuser", "-u", self.instructor, "--", "env", "-i", *env, *map(str, command)],
            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip
        try:
            out, err = process.communicate(timeout=self.deadline.left(timeout))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            pytest.fail(f"{shown}: not done in time")
        hint = (  # the users' servers, too, run this environment as their own users
            f"\n(another user cannot run {BIN / 'python'} or read the course: each folder above "
            "them needs o+x, the files o+r)"
            if "Permission denied" in err
            else ""
        )
        assert process.returncode == 0, f"{shown}:\n{err[-3000:]}{hint}"
        return out

    def settings(self) -> Path:
        """Step 4: the hub's configuration and the users' Jupyter settings, copied out of deploy/,
        and the test's own additions (its ports, and a token to drive the REST API with)."""
        etc = self.folder / "etc"
        etc.mkdir()
        shutil.copy(DEPLOY / "jupyterhub_config.py", etc)
        shutil.copytree(DEPLOY / "jupyter", etc / "jupyter")
        (etc / "test_config.py").write_text(
            "import os\n"
            "c = get_config()  # noqa: F821\n"
            f"load_subconfig({str(etc / 'jupyterhub_config.py')!r})  # noqa: F821\n"
            f"c.JupyterHub.hub_bind_url = 'http://127.0.0.1:{_free_port()}'\n"
            f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{_free_port()}'\n"
            "c.JupyterHub.services.append(\n"
            "    {'name': 'class-driver', 'api_token': os.environ['CLASS_DRIVER_TOKEN']}\n"
            ")\n"
            "c.JupyterHub.load_roles.append({\n"
            "    'name': 'class-driver', 'services': ['class-driver'],\n"
            "    'scopes': ['admin:users', 'admin:servers', 'access:servers', 'list:users',\n"
            "               'read:services'],\n"
            "})\n"
        )
        return etc

    def start_hub(self, etc: Path, exchange: Path):
        """Step 7: the hub, as root, in a folder of its own (its database and cookie secret)."""
        port = _free_port()
        self.base = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "ATTNCOURSE_HUB_URL": self.base,
            "ATTNCOURSE_EXCHANGE": str(exchange),
            "ATTNCOURSE_COURSE_ID": COURSE_ID,
            "ATTNCOURSE_INSTRUCTORS": self.instructor,
            "ATTNCOURSE_STUDENTS": ",".join(self.students),
            "CLASS_DRIVER_TOKEN": self.token,
        }
        run = self.folder / "hub"
        run.mkdir()
        self.hub = subprocess.Popen(
            [str(BIN / "jupyterhub"), "-f", str(etc / "test_config.py")],
            cwd=run, env=env, stdout=self.hub_log.open("w"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def together(self, *calls):
        """Run ``calls`` at once, each in a thread; the first failure fails the test (``close``
        waits for every thread, so none starts anything after it)."""
        errors = []

        def run(call):
            try:
                call()
            except BaseException as error:  # reported in the test's own thread
                errors.append(error)

        threads = [threading.Thread(target=run, args=(call,), daemon=True) for call in calls]
        self.threads += threads
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(self.deadline.left())
        if any(thread.is_alive() for thread in threads):
            pytest.fail(f"not done within {self.deadline.seconds} s")
        if errors:
            raise errors[0]

    # ------------------------------------------------------------------ the REST API

    def api(self, method: str, path: str, data=None, timeout: float = 60):
        body = None if data is None else json.dumps(data).encode()
        request = urllib.request.Request(self.base + path, data=body, method=method)
        request.add_header("Authorization", f"token {self.token}")
        if body is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=self.deadline.left(timeout)) as response:
            text = response.read()
        return json.loads(text) if text else None

    def wait(self, what: str, ready, pause: float = 0.5):
        while True:
            if self.hub is not None and self.hub.poll() is not None:
                pytest.fail(f"the hub stopped while waiting for {what}:\n{self.log()}")
            with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError):
                if ready():
                    return
            if self.deadline.end - time.monotonic() < pause:
                pytest.fail(f"no {what} within {self.deadline.seconds} s:\n{self.log()}")
            time.sleep(pause)

    def spawn(self, user: str):
        with contextlib.suppress(urllib.error.HTTPError):  # 409: the hub made it already
            self.api("POST", f"/hub/api/users/{user}")
        self.api("POST", f"/hub/api/users/{user}/server")

    def server_ready(self, user: str) -> bool:
        server = self.api("GET", f"/hub/api/users/{user}")["servers"].get("", {})
        return bool(server.get("ready"))

    def lab_settings(self, user: str) -> dict:
        """The page settings JupyterLab's page carries for ``user`` (jupyter-config-data)."""
        request = urllib.request.Request(f"{self.base}/user/{urllib.parse.quote(user)}/lab")
        request.add_header("Authorization", f"token {self.token}")
        with urllib.request.urlopen(request, timeout=self.deadline.left(60)) as response:
            page = response.read().decode()
        start = page.index(">", page.index('id="jupyter-config-data"')) + 1
        return json.loads(page[start : page.index("</script>", start)])

    def lab_defaults(self, user: str, plugin: str) -> dict:
        """The defaults of JupyterLab plugin ``plugin``'s settings on ``user``'s server: its
        schema's, with the app settings' overrides."""
        path = f"/user/{urllib.parse.quote(user)}/lab/api/settings/{plugin}"
        schema = self.api("GET", path)["schema"]
        return {key: value.get("default") for key, value in schema["properties"].items()}

    def log(self) -> str:
        return self.hub_log.read_text(errors="replace")[-4000:] if self.hub_log.exists() else ""

    # ------------------------------------------------------------------ tearing down

    def _processes(self, users) -> list[int]:
        """The processes of ``users``."""
        uids = set()
        for user in users:
            with contextlib.suppress(KeyError):
                uids.add(pwd.getpwnam(user).pw_uid)
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if entry.stat().st_uid in uids:
                        found.append(int(entry.name))
        return found

    def peak_mb(self, user: str) -> int:
        """The peak resident memory of ``user``'s largest process (its server), in MB."""
        peak = 0
        for pid in self._processes([user]):
            with contextlib.suppress(OSError, StopIteration):
                status = Path(f"/proc/{pid}/status").read_text().splitlines()
                kb = next(line for line in status if line.startswith("VmHWM:")).split()[1]
                peak = max(peak, int(kb) // 1024)
        return peak

    def close(self):
        """Stop every server, the hub and its proxy; delete the users and every file."""
        for thread in self.threads:  # their commands end by the deadline
            thread.join(max(0.0, self.deadline.end - time.monotonic()) + 30)
        if self.hub is not None and self.hub.poll() is None:
            self.hub.send_signal(signal.SIGTERM)  # the hub stops the servers and its proxy
            try:
                self.hub.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.hub.pid, signal.SIGKILL)  # the hub and its proxy
                self.hub.wait(10)
        if self.hub is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.hub.pid, signal.SIGKILL)  # a proxy left behind
        left = []
        for user in self.users:
            for _ in range(3):  # a process of the user that the hub did not stop
                for pid in self._processes([user]):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                done = subprocess.run(["userdel", "--remove", user], capture_output=True,
                                      text=True, timeout=60)  # fmt: skip
                if done.returncode in (0, 6):  # 6: no such user
                    break
                time.sleep(1)
            else:
                left.append(f"{user}: {done.stderr.strip()}")
        self.users.clear()
        shutil.rmtree(self.folder, ignore_errors=True)
        assert not left, f"users the test could not delete: {left}"


def _answers(instructor: Path, exercises) -> dict[str, str]:
    """{grade id of an answer cell: the instructor's solution} for ``exercises``."""
    ids = {answer for exercise in exercises for answer in exercise.answers}
    nb = json.loads(instructor.read_text())
    return {
        cell["metadata"]["nbgrader"]["grade_id"]: "".join(cell["source"])
        for cell in nb["cells"]
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") in ids
    }


def _work(the_class: Class, student: str, answers: dict[str, str]):
    """The student fetches chapter 01, fills in ``answers`` and submits, through their server."""
    user = urllib.parse.quote(student)
    query = urllib.parse.urlencode({"course_id": COURSE_ID, "assignment_id": "ch01"})
    fetched = the_class.api("POST", f"/user/{user}/assignments/fetch?{query}", timeout=120)
    assert fetched["success"], fetched
    path = f"/user/{user}/api/contents/ch01/{CHAPTER.name}"
    model = the_class.api("GET", f"{path}?content=1")
    cells = model["content"]["cells"]
    assert not any("BEGIN SOLUTION" in "".join(c["source"]) for c in cells), "solutions released"
    for cell in cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id]
    the_class.api("PUT", path, {"type": "notebook", "format": "json", "content": model["content"]})
    submitted = the_class.api("POST", f"/user/{user}/assignments/submit?{query}", timeout=120)
    assert submitted["success"], submitted


def test_a_class_on_jupyterhub_releases_collects_and_grades_end_to_end():
    _needs()
    deadline = Deadline(DEADLINE)
    the_class = Class(deadline)
    start = time.monotonic()

    def lap(name):  # when each step was done, in seconds from the start
        the_class.timings[name] = round(time.monotonic() - start, 1)

    try:
        the_class.add_users()
        etc = the_class.settings()
        exchange = the_class.folder / "exchange"  # step 5: written by every user
        exchange.mkdir(mode=0o777)
        exchange.chmod(0o777)
        the_class.start_hub(etc, exchange)  # step 7
        course = Path(pwd.getpwnam(the_class.instructor).pw_dir) / "course"
        ch01 = assignment_id(CHAPTER)

        def prepare():  # steps 6 and 8, while the hub starts the students' servers
            the_class.as_instructor(
                BIN / "attncourse", "course", CHAPTER, "--out", course, "--exchange", exchange,
                "--course-id", COURSE_ID,
            )  # fmt: skip
            the_class.as_instructor("nbgrader", "generate_assignment", ch01)
            the_class.as_instructor("nbgrader", "release_assignment", ch01)
            assert (exchange / COURSE_ID / "outbound" / ch01 / CHAPTER.name).is_file()
            lap("course made and chapter 01 released")

        def servers():  # step 9: the three servers at once
            the_class.wait("hub", lambda: the_class.api("GET", "/hub/api/") is not None)
            for student in the_class.students:
                the_class.spawn(student)
            for student in the_class.students:
                the_class.wait(f"server of {student}", lambda s=student: the_class.server_ready(s))
            lap("hub and three servers up")

        the_class.together(prepare, servers)

        exercises = assignment.read(CHAPTER).exercises
        half = exercises[: len(exercises) // 2]  # the first ones: later answers use earlier ones
        work = {  # student -> (answers, points they earn)
            the_class.students[0]: (_answers(CHAPTER, exercises), sum(e.points for e in exercises)),
            the_class.students[1]: (_answers(CHAPTER, half), sum(e.points for e in half)),
            the_class.students[2]: ({}, 0),
        }
        the_class.together(*(lambda s=s: _work(the_class, s, work[s][0]) for s in work))
        disabled = the_class.lab_settings(the_class.students[0])["disabledExtensions"]
        assert {  # a student's JupyterLab has nbgrader's student tools only
            "@jupyter/nbgrader:formgrader",
            "@jupyter/nbgrader:create-assignment",
        } <= set(disabled)
        assert "@jupyter/nbgrader:assignment-list" not in disabled
        # and the JupyterLab defaults attncourse start gives: the execution indicator in the
        # status bar
        tracker = the_class.lab_defaults(
            the_class.students[0], "@jupyterlab/notebook-extension:tracker"
        )
        assert tracker["kernelStatus"]["showOnStatusBar"] is True, tracker["kernelStatus"]
        culler = the_class.api("GET", "/hub/api/services/idle-culler")  # idle servers stop
        assert culler["pid"] and Path(f"/proc/{culler['pid']}").exists(), culler
        the_class.timings["server peak MB"] = the_class.peak_mb(the_class.students[0])
        lap("fetched, answered, submitted")

        the_class.as_instructor("nbgrader", "collect", ch01)  # step 10
        submitted = sorted(course.glob(f"submitted/*/{ch01}/{CHAPTER.name}"))
        assert [p.parts[-3] for p in submitted] == sorted(the_class.students)
        lap("collected")
        the_class.as_instructor(
            BIN / "attncourse", "grade", *submitted, "-j", "2", "--csv", course / "grades.csv",
            timeout=300,
        )  # fmt: skip
        lap("graded")

        rows = list(csv.DictReader((course / "grades.csv").open(encoding="utf-8")))
        assert {(r["student"], r["assignment"], float(r["total"])) for r in rows} == {
            (student, ch01, points) for student, (_, points) in work.items()
        }
        assert len(rows) == 3
        assert all(float(r["max_points"]) == sum(e.points for e in exercises) for r in rows)
    finally:
        the_class.close()
        lap("stopped and removed")
        print(f"class on JupyterHub (seconds): {the_class.timings}")
    assert not any(Path("/home").glob(f"{the_class.prefix}-*")), "a home folder was left"
