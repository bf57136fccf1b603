#!/bin/sh
# Run every paper study at the medium scale, one at a time, cheapest first, resumable (finished runs are cached in
# $TEXTCLS_HOME/studies/NAME-medium.json; running this again goes on where it stopped). Then copy the finished
# results into the package with `python -m textcls study --ship` (only studies with every point at >= 3 seeds).
# TR-CMP (sst5) and HCAN-F3 (imdb) need data that is not embedded: TEXTCLS_DATA=/folder/with/sst5/and/imdb.
# Usage: TEXTCLS_HOME=/some/folder TEXTCLS_DATA=../shared/data sh scripts/run_medium_studies.sh [NAME ...]
cd "$(dirname "$0")/.." || exit 1
PY=${PYTHON:-python}
NAMES=${*:-"ACT-T3 AGCNN-T5 HCAN-F3 LAMA-F3 TR-CMP ACT-F3"}
for n in $NAMES; do
    OMP_NUM_THREADS=1 TEXTCLS_THREADS=1 nice -n 19 "$PY" -m textcls study "$n" --scale medium --run --yes || echo "$n failed"
done
