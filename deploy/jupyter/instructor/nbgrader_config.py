"""nbgrader's settings in an instructor's server: the course, its exchange, and the course
directory that `attncourse course --out ~/course` made (formgrader and nbgrader's commands in a
terminal use it from any folder).

The hub sets the variables for every server (deploy/jupyterhub_config.py, deploy/z2jh/values.yaml).
"""

import os

c = get_config()  # noqa: F821 (nbgrader's config loader provides it)
c.CourseDirectory.course_id = os.environ.get("ATTNCOURSE_COURSE_ID", "attention")
c.Exchange.root = os.environ.get("ATTNCOURSE_EXCHANGE", "/srv/nbgrader/exchange")
c.CourseDirectory.root = os.path.expanduser(os.environ.get("ATTNCOURSE_COURSE_DIR", "~/course"))
