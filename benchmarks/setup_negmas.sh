#!/usr/bin/env bash
# Create benchmarks/.venv-negmas with NegMAS 0.16 for benchmarks/negmas_compare.py.
#
#     bash benchmarks/setup_negmas.sh [PYTHON]
#
# NegMAS lives in its own venv: its dependencies (and their pins) stay out of dealroom's.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-negmas"
python="${1:-${PYTHON:-python3}}"
if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "negmas==0.16.*"
"$venv/bin/python" -c "import negmas; print('negmas', negmas.__version__)"
