#!/usr/bin/env bash
# Run the GPU runner on an offline machine with a CUDA GPU, torch, numpy, matplotlib and pytest:
#
#   tools/gpu-runner/run.sh OUT [PYTEST ARGUMENTS...]    install the wheels, run `make test-gpu`
#   tools/gpu-runner/run.sh --check OUT                  install the wheels and import them, nothing more
#
# The wheels come from prepare.py (tools/gpu-runner/wheels/). Into OUT it writes devices.txt
# (gpulab info), log.txt (all the output), result.txt (how make test-gpu ended) and
# bench-results/ (the reference records to copy into src/gpulab/reference_results/).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}
check_only=0
if [ "${1:-}" = "--check" ]; then check_only=1; shift; fi
out=${1:?usage: tools/gpu-runner/run.sh [--check] OUT [pytest arguments...]}
shift

if [ "$check_only" = 0 ]; then
    "$python" -c 'import sys, torch; torch.cuda.is_available() or sys.exit(f"run.sh needs a CUDA GPU: torch {torch.__version__} finds none on this machine")' || exit 2
    command -v make > /dev/null || { echo "run.sh needs make on this machine"; exit 2; }
fi
ls "$here"/wheels/*.whl > /dev/null 2>&1 || { echo "no wheels in $here/wheels: run tools/gpu-runner/prepare.py first"; exit 2; }

mkdir -p "$out"
site=$(mktemp -d "${TMPDIR:-/tmp}/gpulab-site-XXXXXX")
trap 'rm -rf "$site"' EXIT
"$python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --no-compile \
    --target "$site" "$here"/wheels/*.whl || { echo "run.sh: the wheels would not install"; exit 2; }
export PYTHONPATH="$site:$root/src${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$site/bin:$PATH"
cd "$root"

"$python" -c 'import nbval, nbclient, ipykernel, ipywidgets, gpulab; print("installed: gpulab", gpulab.__version__, "ipywidgets", ipywidgets.__version__, "ipykernel", ipykernel.__version__)' \
    || { echo "run.sh: the installed packages do not import"; exit 2; }
"$python" -m gpulab info > "$out/devices.txt" 2>&1
[ "$check_only" = 1 ] && exit 0

make test-gpu GPU_PYTHON="$python" BENCH_OUT="$out/bench-results" PYTEST_ARGS="$*" 2>&1 | tee "$out/log.txt"
status=${PIPESTATUS[0]}
{ echo "make test-gpu exited $status"; grep -E "^(=+ .*(passed|failed|error).* =+|[0-9]+ experiment)" "$out/log.txt"; } > "$out/result.txt"
cat "$out/result.txt"
exit "$status"
