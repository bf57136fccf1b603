"""`python -m textcls ...`: the command line (see textcls/cli.py)."""
from .cli import main

raise SystemExit(main())
