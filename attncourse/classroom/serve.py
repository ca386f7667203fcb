"""``python -m attncourse.classroom.serve jupyterlab|voila ARGS``: JupyterLab or Voilà, exactly as
``python -m jupyterlab ARGS`` or ``python -m voila ARGS`` runs it, started from this package, whose
``__init__`` keeps jsonschema from importing rfc3987_syntax (about 1 s of CPU at every start:
JupyterLab answers in about 1.3 s instead of 2.4 on 2 cores). ``attncourse start`` and ``attncourse
present`` run their servers this way.
"""

import importlib
import sys

APPS = {"jupyterlab": "jupyterlab.labapp", "voila": "voila.app"}  # each one's main()

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in APPS:
        sys.exit(f"usage: python -m attncourse.classroom.serve {{{','.join(APPS)}}} [ARGS]")
    app = APPS[sys.argv.pop(1)]
    sys.exit(importlib.import_module(app).main())
