"""`python -m ncclkit`: the same as the `ncclkit` command."""

import sys

from ncclkit.cli import main

sys.exit(main())
