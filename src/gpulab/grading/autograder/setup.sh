#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu).
set -euo pipefail
source_dir="$(cd "$(dirname "$0")" && pwd)"
if ! command -v python3 > /dev/null || ! python3 -m pip --version > /dev/null 2>&1 || ! command -v bwrap > /dev/null; then
    if command -v apt-get > /dev/null && [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        # bubblewrap: the grader's sandbox, where the container lets it run
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip python3-venv bubblewrap > /dev/null || true
    fi
fi
# gpulab itself: the copy in lib/, on the path of every Python that starts (the kernels' too).
site="$(python3 -c 'import site, sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$source_dir/lib" > "$site/gpulab-autograder.pth"
# What gpulab needs. A torch already here stays as it is (pinned); where there is none, the CPU build.
constraints="$source_dir/constraints.txt"
python3 "$source_dir/pin_installed.py" "$constraints"
# (Ubuntu 24.04 marks its Python as managed by apt: this image is the autograder's alone.)
# shellcheck disable=SC2086  # GPULAB_PIP_OPTIONS holds several options, split on purpose
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check ${GPULAB_PIP_OPTIONS:-} \
    --extra-index-url https://download.pytorch.org/whl/cpu \
    --constraint "$constraints" --requirement "$source_dir/requirements.txt"
python3 -c "import gpulab.grading, ipykernel, jupyter_client, torch; print('gpulab autograder ready: torch', torch.__version__)"
