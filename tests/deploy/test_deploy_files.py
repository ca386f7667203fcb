"""deploy/ agrees with itself: students get nbgrader's student tools only and instructors its
instructor tools, on one machine (jupyterhub_config.py and jupyter/) as on Kubernetes
(Dockerfile, z2jh/values.yaml); nbgrader's exchange is where every server looks for it; the
batch grading Jobs agree on their shards and assignment."""

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from traitlets.config import Config, PyFileConfigLoader

from attncourse.classroom.start import LAB, SETTINGS

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
STUDENT_TOOLS = {"@jupyter/nbgrader:assignment-list", "@jupyter/nbgrader:validate-assignment"}
INSTRUCTOR_TOOLS = {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment"}


def _json(path: Path):
    return json.loads(path.read_text())


def _values() -> dict:
    return yaml.safe_load((DEPLOY / "z2jh" / "values.yaml").read_text())


def _nbgrader_settings(text: str, env=None) -> Config:
    """What an nbgrader_config.py sets (its environment variables from ``env``)."""
    config = Config()
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        exec(compile(text, "nbgrader_config.py", "exec"), {"get_config": lambda: config})
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return config


def test_students_get_nbgrader_s_student_tools_only_and_instructors_every_tool():
    student, instructor = DEPLOY / "jupyter" / "student", DEPLOY / "jupyter" / "instructor"
    disabled = _json(student / "labconfig" / "page_config.json")["disabledExtensions"]
    assert {name for name, off in disabled.items() if off} >= INSTRUCTOR_TOOLS
    assert not STUDENT_TOOLS & set(disabled)
    server = _json(student / "jupyter_server_config.json")["ServerApp"]["jpserver_extensions"]
    assert server["nbgrader.server_extensions.formgrader"] is False
    assert "nbgrader.server_extensions.assignment_list" not in server
    enabled = _json(instructor / "labconfig" / "page_config.json")["disabledExtensions"]
    assert all(enabled[name] is False for name in INSTRUCTOR_TOOLS)
    server = _json(instructor / "jupyter_server_config.json")["ServerApp"]["jpserver_extensions"]
    assert server["nbgrader.server_extensions.formgrader"] is True


def test_every_role_on_the_hub_has_the_interface_attncourse_start_gives(monkeypatch):
    """No news pop-up, no busy icon in the tab, the execution indicator in the status bar and the
    kernel's WebSocket without Nagle's algorithm, as ``attncourse start`` sets them: its page
    and server settings in each role's, its JupyterLab defaults (``SETTINGS``) as the app settings
    of every user's server, on one machine and in the image."""
    course = _json(LAB / "course" / "labconfig" / "page_config.json")
    course_server = _json(LAB / "course" / "jupyter_server_config.json")["ServerApp"]
    for role in ("student", "instructor"):
        disabled = _json(DEPLOY / "jupyter" / role / "labconfig" / "page_config.json")
        assert course["disabledExtensions"].items() <= disabled["disabledExtensions"].items(), role
        server = _json(DEPLOY / "jupyter" / role / "jupyter_server_config.json")["ServerApp"]
        assert course_server.items() <= server.items(), role
    monkeypatch.delenv("ATTNCOURSE_CONFIG", raising=False)
    config = PyFileConfigLoader("jupyterhub_config.py", path=str(DEPLOY)).load_config()
    assert f"--LabApp.app_settings_dir={SETTINGS}" in config.Spawner.args
    dockerfile = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    copied = re.search(r"COPY (\S+/settings/overrides\.json) +(\S+)", dockerfile)
    assert copied and ROOT / copied[1] == SETTINGS / "overrides.json", copied
    # the app settings folder of the image's JupyterLab (python:3.11-slim: sys.prefix /usr/local)
    assert copied[2] == "/usr/local/share/jupyter/lab/settings/overrides.json"


def test_kubernetes_gives_each_role_the_settings_one_machine_gives():
    files = _values()["singleuser"]["extraFiles"]
    instructor = DEPLOY / "jupyter" / "instructor"
    assert files["instructor-server-config"]["data"] == _json(
        instructor / "jupyter_server_config.json"
    )
    assert files["instructor-lab-config"]["data"] == _json(
        instructor / "labconfig" / "page_config.json"
    )
    # the students' settings are the image's, copied from the same folder
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "COPY deploy/jupyter/student/ /etc/jupyter/" in dockerfile
    assert files["nbgrader-config"]["mountPath"] == "/etc/jupyter/nbgrader_config.py"
    hook = _values()["hub"]["extraConfig"]["attncourse-roles"]
    folder = re.search(r'"JUPYTER_CONFIG_PATH"\] = "([^"]+)"', hook).group(1)
    for key in ("instructor-nbgrader-config", "instructor-server-config", "instructor-lab-config"):
        assert files[key]["mountPath"].startswith(folder + "/"), key


def test_every_server_finds_nbgrader_s_exchange_where_it_is_mounted():
    singleuser = _values()["singleuser"]
    mounted = {m["mountPath"] for m in singleuser["storage"]["extraVolumeMounts"]}
    for key in ("nbgrader-config", "instructor-nbgrader-config"):
        settings = _nbgrader_settings(singleuser["extraFiles"][key]["stringData"])
        assert settings.Exchange.root in mounted, key
    env = {"ATTNCOURSE_EXCHANGE": "/x/exchange", "ATTNCOURSE_COURSE_ID": "c1", "HOME": "/home/i"}
    for role in ("student", "instructor"):
        text = (DEPLOY / "jupyter" / role / "nbgrader_config.py").read_text()
        settings = _nbgrader_settings(text, env)
        assert (settings.Exchange.root, settings.CourseDirectory.course_id) == ("/x/exchange", "c1")
    instructor = _nbgrader_settings(
        (DEPLOY / "jupyter" / "instructor" / "nbgrader_config.py").read_text(), env
    )
    assert instructor.CourseDirectory.root == "/home/i/course"  # attncourse course --out ~/course


class _User:
    def __init__(self, name):
        self.name = name


class _Spawner:
    def __init__(self, name):
        self.user = _User(name)


def test_the_one_machine_hub_gives_each_role_its_settings_and_culls_idle_servers(monkeypatch):
    monkeypatch.setenv("ATTNCOURSE_INSTRUCTORS", "ida")
    monkeypatch.setenv("ATTNCOURSE_STUDENTS", "sam,sue")
    monkeypatch.setenv("ATTNCOURSE_EXCHANGE", "/x/exchange")
    monkeypatch.delenv("ATTNCOURSE_CONFIG", raising=False)
    loader = PyFileConfigLoader("jupyterhub_config.py", path=str(DEPLOY))
    config = loader.load_config()
    env = config.Spawner.environment
    assert env["JUPYTER_CONFIG_PATH"](_Spawner("ida")) == str(DEPLOY / "jupyter" / "instructor")
    assert env["JUPYTER_CONFIG_PATH"](_Spawner("sam")) == str(DEPLOY / "jupyter" / "student")
    assert env["ATTNCOURSE_EXCHANGE"] == "/x/exchange"
    assert config.Authenticator.allowed_users == {"ida", "sam", "sue"}
    assert config.Authenticator.admin_users == {"ida"}
    assert Path(config.Spawner.cmd[0]).name == "jupyterhub-singleuser"
    culler = next(s for s in config.JupyterHub.services if s["name"] == "idle-culler")
    assert culler["command"][1:3] == ["-m", "jupyterhub_idle_culler"]
    assert any(r["services"] == ["idle-culler"] for r in config.JupyterHub.load_roles)


def test_the_one_machine_hub_says_where_its_settings_are_when_it_cannot_find_them(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("ATTNCOURSE_CONFIG", str(tmp_path))
    loader = PyFileConfigLoader("jupyterhub_config.py", path=str(DEPLOY))
    with pytest.raises(SystemExit, match="set ATTNCOURSE_CONFIG to a copy of deploy/jupyter"):
        loader.load_config()


def test_the_one_machine_hub_says_so_when_the_course_is_not_installed_beside_it(monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.delenv("ATTNCOURSE_CONFIG", raising=False)
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "attncourse" else find_spec(name, *a),
    )
    loader = PyFileConfigLoader("jupyterhub_config.py", path=str(DEPLOY))
    with pytest.raises(SystemExit, match="the course is not installed in .*step 2"):
        loader.load_config()


def test_the_batch_jobs_agree_on_the_shards_and_the_assignment():
    job = next(yaml.safe_load_all((DEPLOY / "batch" / "grade-job.yaml").read_text()))
    merge = yaml.safe_load((DEPLOY / "batch" / "merge-job.yaml").read_text())
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    env = {e["name"]: e["value"] for e in spec["template"]["spec"]["containers"][0]["env"]}
    assert int(env["SHARDS"]) == spec["completions"] == spec["parallelism"]
    script = spec["template"]["spec"]["containers"][0]["args"][0]
    assert '--shard "$JOB_COMPLETION_INDEX/$SHARDS"' in script
    merge_env = {
        e["name"]: e["value"] for e in merge["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert merge_env["ASSIGNMENT"] == env["ASSIGNMENT"]
    claims = {
        v["persistentVolumeClaim"]["claimName"]
        for doc in (job, merge)
        for v in doc["spec"]["template"]["spec"]["volumes"]
    }
    volumes = yaml.safe_load_all((DEPLOY / "z2jh" / "volumes.yaml").read_text())
    assert claims <= {v["metadata"]["name"] for v in volumes}
    # the Jobs run the instructors' image (the instructor notebooks, bubblewrap), as their servers
    hook = _values()["hub"]["extraConfig"]["attncourse-roles"]
    instructor_image = re.search(r'instructor_image = "([^"]+)"', hook).group(1)
    for doc in (job, merge):
        assert doc["spec"]["template"]["spec"]["containers"][0]["image"] == instructor_image
    assert _values()["singleuser"]["image"]["name"] not in instructor_image
    assert "FROM course AS instructor" in (DEPLOY / "Dockerfile").read_text()
