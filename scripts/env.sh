# The virtual environment the app and the tests run in: sourced by `scripts/app`, run by the README's test command
# (`bash scripts/env.sh && .venv/bin/python -m pytest -q`, which .ci/run runs exactly).
# Made on first use: .venv beside the code, requirements.txt installed under constraints.txt (the exact versions the
# suite passed with). Made again - packages brought to the pinned versions - whenever requirements.txt, constraints.txt
# or the Python it was made with change (a stamp file in .venv remembers what it was made from); otherwise nothing
# is done, so both start at once. TEXTCLS_VENV chooses another folder; PYTHON another interpreter (3.10+).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TEXTCLS_VENV:-$ROOT/.venv}"
STAMP="$VENV/.textcls-installed"
PY="${PYTHON:-python3}"

if ! command -v "$PY" >/dev/null 2>&1; then
  echo "textcls: $PY not found: install Python 3.10 or newer (Debian/Ubuntu: apt install python3 python3-venv)" >&2
  exit 2
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "textcls: $("$PY" --version 2>&1) is too old: textcls needs Python 3.10 or newer (set PYTHON=python3.11)" >&2
  exit 2
fi
want="$("$PY" - "$ROOT/requirements.txt" "$ROOT/constraints.txt" <<'PY'
import hashlib, sys
h = hashlib.sha256()
for name in sys.argv[1:]:
    with open(name, "rb") as f:
        h.update(f.read())
print(h.hexdigest(), sys.version.split()[0])
PY
)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  echo "textcls: setting up $VENV (requirements.txt under constraints.txt; a few minutes the first time)" >&2
  if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV" || {
      echo "textcls: could not make a virtual environment with $PY (Debian/Ubuntu: apt install python3-venv)" >&2
      exit 2; }
  fi
  rm -f "$STAMP"
  (cd "$ROOT" && "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
      -r requirements.txt -c constraints.txt)
  echo "$want" > "$STAMP"
fi
