"""``python -m tpar ...`` runs the ``tpar`` command (also under ``torchrun``)."""

import sys

from tpar.cli import main

sys.exit(main())
