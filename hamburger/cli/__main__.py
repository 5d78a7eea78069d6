"""`python -m hamburger.cli VERB ...` (what torchrun launches): the same as the `hamburger` command."""

import sys

from hamburger.cli.main import main

sys.exit(main())
