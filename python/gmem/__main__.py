"""`python -m gmem ARGS` is `gmemprof ARGS` (gmem/_gmemprof.py): `python -m gmem record -- CMD...`
records CMD."""

import sys

from ._gmemprof import main

if __name__ == "__main__":
    sys.exit(main())
