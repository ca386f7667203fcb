"""nbgrader's settings in a student's server: which course, and where its exchange is.

The hub sets both for every server (deploy/jupyterhub_config.py, deploy/z2jh/values.yaml).
"""

import os

c = get_config()  # noqa: F821 (nbgrader's config loader provides it)
c.CourseDirectory.course_id = os.environ.get("ATTNCOURSE_COURSE_ID", "attention")
c.Exchange.root = os.environ.get("ATTNCOURSE_EXCHANGE", "/srv/nbgrader/exchange")
