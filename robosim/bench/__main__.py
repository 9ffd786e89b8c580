import sys

from robosim.bench.cli import main

sys.exit(main())
