"""`python -m tui TABLE`."""

import sys

from tui import main

sys.exit(main())
