"""The exercises' checks: ``engine`` (``check_function``, ``Case``, the from-scratch guard) and one
module of checks per chapter, ``chNN`` for notebook ``NN_*``. A graded test cell imports
``attncourse.exercises.chNN`` and reloads it (and the engine) before its hidden tests run.
"""
