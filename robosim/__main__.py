"""`python -m robosim ARGS`: the same as `robosim ARGS`."""
import sys

from robosim.cli import main

sys.exit(main())
