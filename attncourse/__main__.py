"""``python -m attncourse`` is the ``attncourse`` command."""

import sys

from .cli import main

sys.exit(main())
