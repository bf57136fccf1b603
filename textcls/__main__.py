"""`python -m textcls ...`: the command line (see textcls/cli/).

One of several torchrun processes whose command succeeded leaves with os._exit (its output flushed, its process
group left): the interpreter's teardown destroys a library's C++ thread that is still joinable, which aborted the
process ("terminate called without an active exception", SIGABRT) after a run that succeeded - 2 of 30
two-process trainings with two busy processes, with no Python frame on the stack. Nothing of textcls runs after
main returns, so nothing is lost by skipping that teardown. A rank that failed exits as usual: leaving at once, it
had torchrun stop the other ranks (SIGTERM) before they had seen the failure and said so.
"""
import os
import sys

from textcls.cli import main

code = main()
if code == 0 and os.environ.get("TORCHELASTIC_RUN_ID") is not None and \
        os.environ.get("WORLD_SIZE", "1").strip() not in ("", "1"):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
raise SystemExit(code)
