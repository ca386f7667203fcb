"""JupyterHub for a class on one machine: local users, nbgrader's exchange, the course installed.

deploy/README.md ("A class on one machine") gives the steps. Run as root, from the folder that
keeps the hub's database and cookie secret:

    cd /srv/jupyterhub && jupyterhub -f /etc/attncourse/jupyterhub_config.py

Every setting an administrator changes is an environment variable (defaults in brackets):

    ATTNCOURSE_COURSE_ID     nbgrader's course id                    [attention]
    ATTNCOURSE_EXCHANGE      nbgrader's exchange folder              [/srv/nbgrader/exchange]
    ATTNCOURSE_CONFIG        the folder of the users' Jupyter settings, student/ and
                             instructor/ (deploy/jupyter)            [jupyter/ beside this file]
    ATTNCOURSE_INSTRUCTORS   comma-separated user names              [instructor]
    ATTNCOURSE_STUDENTS      comma-separated user names              [none: any account may log in]
    ATTNCOURSE_HUB_URL       where the hub listens                   [http://:8000]
    ATTNCOURSE_IDLE_TIMEOUT  seconds before an idle server stops     [3600]

Users log in with their system password (PAM). Each user's server runs as that user, in the
Python environment that runs the hub, where the course is installed with its `hub` and
`classroom` extras. Students get JupyterLab with nbgrader's student extensions only (Assignments:
fetch, validate, submit); instructors get its instructor extensions too (Formgrader, Create
Assignment, Courses), working on the course directory `attncourse course --out ~/course` made.
"""

import importlib.util
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub's config loader provides it)

bin_dir = Path(sys.executable).parent  # the hub's environment, where the course is installed
settings = Path(os.environ.get("ATTNCOURSE_CONFIG", Path(__file__).resolve().parent / "jupyter"))
course_id = os.environ.get("ATTNCOURSE_COURSE_ID", "attention")
exchange = os.environ.get("ATTNCOURSE_EXCHANGE", "/srv/nbgrader/exchange")
instructors = {u for u in os.environ.get("ATTNCOURSE_INSTRUCTORS", "instructor").split(",") if u}
students = {u for u in os.environ.get("ATTNCOURSE_STUDENTS", "").split(",") if u}

for role in ("student", "instructor"):
    if not (settings / role / "nbgrader_config.py").is_file():
        sys.exit(
            f"jupyterhub_config.py: no {settings / role}: set ATTNCOURSE_CONFIG to a copy "
            "of deploy/jupyter (deploy/README.md, step 4)"
        )

c.JupyterHub.bind_url = os.environ.get("ATTNCOURSE_HUB_URL", "http://:8000")
c.Authenticator.admin_users = instructors  # the instructors administer the hub
if students:
    c.Authenticator.allowed_users = instructors | students
else:
    c.Authenticator.allow_all = True  # every account on the machine may log in

# each user's server: the hub's own Python environment, JupyterLab, the course's settings
c.Spawner.cmd = [str(bin_dir / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 600  # seconds: on a busy 2-core machine a server takes minutes
c.Spawner.http_timeout = 300
# JupyterLab's defaults as `attncourse start` sets them (the kernel's execution indicator in the
# status bar): the course's app settings, read from the installed package without importing it
course = importlib.util.find_spec("attncourse")
if course is None:
    sys.exit(
        f"jupyterhub_config.py: the course is not installed in {sys.prefix}, the hub's "
        "environment (deploy/README.md, step 2)"
    )
course_package = Path(course.origin).parent
c.Spawner.args = [f"--LabApp.app_settings_dir={course_package / 'classroom/lab/course/settings'}"]


def _role(spawner) -> str:
    return "instructor" if spawner.user.name in instructors else "student"


c.Spawner.environment = {
    # nbgrader's and JupyterLab's settings for the user's role (deploy/jupyter/ROLE)
    "JUPYTER_CONFIG_PATH": lambda spawner: str(settings / _role(spawner)),
    "ATTNCOURSE_COURSE_ID": course_id,
    "ATTNCOURSE_EXCHANGE": exchange,
    # the environment's tools first: jupyter, nbgrader, attncourse in a terminal
    "PATH": os.pathsep.join([str(bin_dir), "/usr/local/bin", "/usr/bin", "/bin"]),
}

# a server idle for an hour stops (its files stay); the hub runs the culler itself
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [
            sys.executable,
            "-m",
            "jupyterhub_idle_culler",
            f"--timeout={os.environ.get('ATTNCOURSE_IDLE_TIMEOUT', '3600')}",
        ],
    }
]
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }
]
