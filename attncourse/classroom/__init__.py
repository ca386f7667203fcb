"""The classroom layer: the ``attncourse`` command and what it runs on nbgrader.

``cli`` (the command: release, grade, start) · ``notebooks`` (finding and reading the instructor
notebooks) · ``course`` (a throw-away nbgrader course directory) · ``release`` (student copies that
never overwrite a learner's work) · ``grade`` (headless grading with hidden tests) · ``integrity``
(refusing submissions that edit the tests or tamper with the checks) · ``start`` (the learner's
workspace and JupyterLab) with ``student`` (a student copy made without nbgrader) · ``progress``
· ``present`` · ``site`` · ``extras`` (which optional install each command needs).
"""
