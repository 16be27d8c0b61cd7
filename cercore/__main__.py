"""``python -m cercore``: the command line (see ``cercore.cli``)."""

import sys

from cercore.cli import main

if __name__ == "__main__":
    sys.exit(main())
