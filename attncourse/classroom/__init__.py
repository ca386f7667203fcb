"""The classroom layer: the ``attncourse`` command and what it runs on nbgrader.

``cli`` (the command: release, grade, start) · ``notebooks`` (finding and reading the instructor
notebooks) · ``course`` (a throw-away nbgrader course directory) · ``release`` (student copies that
never overwrite a learner's work) · ``grade`` (headless grading with hidden tests) · ``integrity``
(refusing submissions that edit the tests or tamper with the checks) · ``start`` (the learner's
workspace and JupyterLab) with ``student`` (a student copy made without nbgrader) · ``progress``
· ``present`` · ``serve`` (the servers of ``start`` and ``present``, started through this package) ·
``site`` · ``extras`` (which optional install each command needs).
"""

import sys

# Reading a notebook imports nbformat, whose jsonschema imports rfc3987_syntax, if it is installed
# (Jupyter's own packages install it), only to check the "iri" string format, which no notebook or
# Jupyter schema uses; that import builds some forty Earley parsers, about 1 s of CPU, at every
# start of a command. jsonschema goes without that one check when the module cannot be imported.
sys.modules.setdefault("rfc3987_syntax", None)
