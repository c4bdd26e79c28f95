#!/usr/bin/env bash
# make test-versions: every lesson and solution notebook under nbval on each torch given, each in
# an environment of its own (.venv-torch-VERSION), on the CPU and on a simulated T4.
#
#   tools/test-versions.sh 2.6.0 2.15.0
#
# Torch wheels from the package registry are CUDA builds of about 3 GB with their libraries; they
# are downloaded once into GPULAB_WHEELS (~/.cache/gpulab/wheels) and installed from there. The
# other packages are the versions constraints.txt pins. A machine whose pip configuration caps torch
# (PIP_CONSTRAINT, /etc/xdg/pip) has the cap lifted for these installs only.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
WHEELS=${GPULAB_WHEELS:-$HOME/.cache/gpulab/wheels}
PIP_FLAGS=(--quiet --disable-pip-version-check)
export PIP_CONSTRAINT=/dev/null MPLBACKEND=Agg PYTHONDONTWRITEBYTECODE=1 JUPYTER_PLATFORM_DIRS=1
[ $# -gt 0 ] || { echo "usage: $0 TORCH_VERSION ..."; exit 2; }

results=()
failed=0
scratch=""
trap '[ -z "$scratch" ] || rm -rf "$scratch"' EXIT
for version in "$@"; do
    venv=".venv-torch-$version"
    echo "== torch $version in $venv"
    if [ ! -f "$venv/.installed" ]; then
        rm -rf "$venv"
        "$PYTHON" -m venv "$venv" || exit 1
        grep -v '^torch==' constraints.txt > "$venv/constraints.txt"
        mkdir -p "$WHEELS"
        "$venv/bin/python" -m pip download "${PIP_FLAGS[@]}" -d "$WHEELS" "torch==$version" \
            && "$venv/bin/python" -m pip install "${PIP_FLAGS[@]}" --find-links "$WHEELS" "torch==$version" \
            && "$venv/bin/python" -m pip install "${PIP_FLAGS[@]}" -c "$venv/constraints.txt" -e ".[test]" \
            && "$venv/bin/python" -m gpulab.simulated.hook --install > /dev/null \
            && touch "$venv/.installed" \
            || { echo "torch $version: could not be installed"; results+=("torch $version: not installed"); failed=1; continue; }
    fi
    installed=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')
    for machine in cpu t4; do
        log="$venv/pytest-$machine.log"
        if [ "$machine" = cpu ]; then simulate=""; else simulate=$machine; fi
        # Each run gets a temporary folder of its own, removed after it: nbval kills its kernels, and a killed
        # kernel on torch 2.6 leaves behind the folder torch.distributed.nn made when it was imported.
        scratch=$(mktemp -d) || exit 1
        GPULAB_SIMULATE=$simulate PYDEVD_DISABLE_FILE_VALIDATION=1 TMPDIR=$scratch \
            "$venv/bin/python" -m pytest -q --no-header -p no:cacheprovider notebooks solutions > "$log" 2>&1
        status=$?
        rm -rf "$scratch"
        scratch=""
        summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed)' "$log" | tail -1 | tr -d '=' | sed 's/^ *//; s/ *$//')
        where=$([ "$machine" = cpu ] && echo "on the CPU" || echo "on a simulated ${machine^^}")
        results+=("torch $installed $where: ${summary:-no summary, see $log}")
        if [ $status -ne 0 ]; then failed=1; grep -E '^(FAILED|ERROR)' "$log" | head -20; fi
    done
done
echo
printf '%s\n' "${results[@]}"
exit $failed
