"""`python -m textcls ...`: the command line (see textcls/cli/)."""
from .cli import main

raise SystemExit(main())
