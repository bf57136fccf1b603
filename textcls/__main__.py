"""`python -m textcls ...`: the command line (see textcls/cli/)."""
from textcls.cli import main

raise SystemExit(main())
