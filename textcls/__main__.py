"""`python -m textcls ...`: the command line (see textcls/cli.py)."""
from textcls.cli import main

raise SystemExit(main())
