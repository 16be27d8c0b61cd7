"""``python -m cercore.cli``: the command line (see ``cercore.cli.main``)."""

import sys

from cercore.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
