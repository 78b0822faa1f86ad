"""`python -m jaxcredit.cli`: the `jaxcredit` console script."""

import sys

from jaxcredit.cli import main

sys.exit(main())
