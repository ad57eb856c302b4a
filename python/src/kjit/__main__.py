"""python -m kjit: the kjit command (kjit._cli)."""

import sys

from ._cli import main

sys.exit(main())
