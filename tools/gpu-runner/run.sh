#!/usr/bin/env bash
# Run the GPU run on an offline machine with a CUDA GPU, torch, numpy, matplotlib and pytest:
#
#   tools/gpu-runner/run.sh OUT [PART...] [--limit S] [--budget S]   install the wheels, run the parts (default: all)
#   tools/gpu-runner/run.sh --check OUT                             install the wheels and import them, nothing more
#   tools/gpu-runner/run.sh --help                                  the parts, in order, and how long each takes
#
# The parts, most valuable first, each under an 8-minute limit (--help: how long each took last time):
#   records     gpulab info, probe.py, gpulab bench's reference records, every lesson under nbval
#   cuda-tests  tests/unit with no CUDA test skipped
#   solutions   every solution under nbval
#   answers-NN  one lesson's exercises graded (tests/e2e/test_answers.py -k LESSON)
# Each writes OUT/PART/: its steps' logs, its records as they are made, and result.txt (how it
# ended, or that it was cut off and what had finished). The wheels come from prepare.py
# (tools/gpu-runner/wheels/); --check writes OUT/devices.txt.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}
case "${1:-}" in
    -h | --help) exec "$python" "$here/parts.py" --help ;;
    --check) check_only=1; shift ;;
    *) check_only=0 ;;
esac
out=${1:?usage: tools/gpu-runner/run.sh [--check] OUT [PART...] [--limit S] [--budget S]}
shift

# Unknown parts and a machine without CUDA are refused before anything is installed.
if [ "$check_only" = 0 ]; then
    "$python" "$here/parts.py" --dry-run "$out" "$@" > /dev/null || exit 2
fi
ls "$here"/wheels/*.whl > /dev/null 2>&1 || { echo "no wheels in $here/wheels: run tools/gpu-runner/prepare.py first"; exit 2; }

mkdir -p "$out" && out=$(cd "$out" && pwd)
site=$(mktemp -d "${TMPDIR:-/tmp}/gpulab-site-XXXXXX")
trap 'rm -rf "$site"' EXIT
"$python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --no-compile \
    --target "$site" "$here"/wheels/*.whl || { echo "run.sh: the wheels would not install"; exit 2; }
export PYTHONPATH="$site:$root/src${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$site/bin:$PATH"
cd "$root" || exit 2

"$python" -c 'import nbval, nbclient, ipykernel, ipywidgets, gpulab; print("installed: gpulab", gpulab.__version__, "ipywidgets", ipywidgets.__version__, "ipykernel", ipykernel.__version__)' \
    || { echo "run.sh: the installed packages do not import"; exit 2; }
if [ "$check_only" = 1 ]; then
    "$python" -m gpulab info > "$out/devices.txt" 2>&1
    exit 0
fi
"$python" "$here/parts.py" "$out" "$@"
