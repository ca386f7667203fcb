"""``python -m attncourse`` is the ``attncourse`` command."""

import sys

from .classroom.cli import main

sys.exit(main())
