"""`python -m textcls ...`: the command line (see textcls/cli/).

One of several torchrun processes leaves with os._exit once the command is over (its output flushed, its process
group left): the interpreter's teardown then destroys a library's C++ thread that is still joinable, which aborts
the process ("terminate called without an active exception", SIGABRT) after a run that succeeded - 2 of 30
two-process trainings with two busy processes, with no Python frame on the stack. Nothing of textcls runs after
main returns, so nothing is lost by skipping that teardown.
"""
import os
import sys

from textcls.cli import main

code = main()
if os.environ.get("TORCHELASTIC_RUN_ID") is not None and os.environ.get("WORLD_SIZE", "1").strip() not in ("", "1"):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
raise SystemExit(code)
