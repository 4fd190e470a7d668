"""`python3 -m wb_leaderboard [options]`: the leaderboard's command line (cli.py), as
scripts/leaderboard.sh runs it."""

import sys

from .cli import main

sys.exit(main())
