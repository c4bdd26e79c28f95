# make lab      — set up .venv if needed and start JupyterLab on the lessons
#                 (GPULAB_SIMULATE=t4 make lab: the same on a simulated T4; 4xh100 for a node of four H100s;
#                 mps for a Mac's GPU)
# make lecture LESSON=02 — JupyterLab on lesson 02, to present it: run all cells, then the notebook toolbar's
#                 deck button (or Start Deck in the command palette); Space goes on (cell by cell, slide by slide),
#                 Shift+Space back, Esc stops; every panel stays live (slides from gpulab slides, drawn by
#                 jupyterlab-slideshow); after a click in a panel, the arrows at the bottom right move on
# make check    — the quick loop (under 5 minutes): ruff, the unit tests (tests/unit mirrors src/gpulab) and
#                 the hygiene tests (tests/hygiene), in .venv
# make test     — set up .venv and .venv-colab (Colab's stack, where a Python 3.13 is) if needed, and run every test
# make test-colab — set up .venv-colab (Colab's stack, Python 3.13) and run the Colab lane
# make test-simulated — only the whole course on a simulated T4, a node of four H100s and a Mac (part of make test)
# make test-versions — every lesson and solution on the oldest torch pyproject.toml admits and on the
#                 newest release, each in its own .venv-torch-VERSION, on the CPU and a simulated T4
# make site     — the course's website in site/ (not committed): every lesson and exercise notebook executed
#                 here (about 3 minutes on two cores), rendered by Sphinx with MyST-NB; open site/index.html
# make test-gpu — on a CUDA machine: the GPU run in parts of at most 8 minutes, most valuable first (reference
#                 records and lessons, CUDA tests, solutions, answers); PART=records (or another) runs one

PYTHON ?= python3
VENV := .venv
VENV_COLAB := .venv-colab
PIP_FLAGS := --quiet --disable-pip-version-check
LAB_FLAGS ?= --ip=127.0.0.1
export JUPYTER_PLATFORM_DIRS := 1
export MPLBACKEND := Agg
export PYTHONDONTWRITEBYTECODE := 1

ifeq ($(shell id -u 2>/dev/null),0)
  LAB_FLAGS += --allow-root
endif

.PHONY: lab lecture colab-venv venvs check lint test test-colab test-simulated test-versions test-gpu site clean

# A venv is rebuilt from its stamp's prerequisites: change pyproject.toml or a constraints
# file and the next make brings it up to date; otherwise it is reused as it is.
$(VENV)/.installed: pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "gpulab needs Python 3.10 or newer"; exit 1; }
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) -c constraints.txt -e ".[dev]"
	$(VENV)/bin/python -m gpulab.simulated.hook --install
	@touch $@

# Colab's stack (constraints-colab.txt) on Colab's Python, 3.13: python3.13 on PATH or pyenv's.
# Its torch is a CUDA build from the package registry (about 3 GB with its libraries): downloaded
# once into $(WHEELS).
PYTHON_COLAB ?= $(firstword $(wildcard $(shell pyenv root 2>/dev/null)/versions/3.13*/bin/python3.13) $(shell python3.13 -c 'import sys; print(sys.executable)' 2>/dev/null))
WHEELS ?= $(HOME)/.cache/gpulab/wheels

$(VENV_COLAB)/.installed: pyproject.toml constraints-colab.txt
	@test -x $(VENV_COLAB)/bin/python || $(PYTHON_COLAB) -m venv $(VENV_COLAB)
	$(VENV_COLAB)/bin/python -m pip download $(PIP_FLAGS) -d $(WHEELS) $$(grep '^torch==' constraints-colab.txt)
	$(VENV_COLAB)/bin/python -m pip install $(PIP_FLAGS) --find-links $(WHEELS) -c constraints-colab.txt -e ".[test]"
	$(VENV_COLAB)/bin/python -m gpulab.simulated.hook --install
	@touch $@

# Where there is no Python 3.13, the Colab lane is left out, saying so (CI requires it: the tests
# that need .venv-colab fail there instead of skipping).
colab-venv:
	@if [ -n "$(PYTHON_COLAB)" ]; then $(MAKE) --no-print-directory $(VENV_COLAB)/.installed; \
	else echo "no Python 3.13 (Colab's) here: the Colab lane is skipped; set PYTHON_COLAB to one"; fi

lab: $(VENV)/.installed
	$(VENV)/bin/jupyter lab $(LAB_FLAGS) notebooks

# LESSON is a lesson's number (02) or its file's stem (02_copying); JupyterLab serves notebooks/ with it open.
lecture: $(VENV)/.installed
	@lesson="$$(ls notebooks/$(LESSON)*.ipynb 2>/dev/null)"; \
	if [ -z "$(LESSON)" ] || [ "$$(printf '%s\n' $$lesson | grep -c .)" != 1 ]; then \
		echo "make lecture LESSON=NN: NN is one lesson in notebooks/ ($$(cd notebooks && ls [0-9]*.ipynb | cut -c1-2 | tr '\n' ' '))"; exit 2; \
	fi; \
	echo "$$lesson: Run > Run All Cells, then the deck button in the notebook's toolbar; Space goes on, Esc stops"; \
	$(VENV)/bin/jupyter lab $(LAB_FLAGS) "$$lesson"

# Both environments are built side by side: most of the time is downloading and unpacking wheels.
venvs:
	@$(MAKE) --no-print-directory -j2 $(VENV)/.installed colab-venv

# The linter and formatter (configured in pyproject.toml) over the package, the tests and the tools.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests tools
	$(VENV)/bin/ruff format --check src tests tools

# Two workers (pytest-xdist), each taking whole test files: the two cores each run a share.
check: lint
	$(VENV)/bin/python -m pytest -n 2 --dist loadfile tests/unit tests/hygiene

# venvs first: both are built side by side (lint first would build .venv alone, then .venv-colab)
test: venvs lint
	$(VENV)/bin/python -m pytest --durations=25

# The Colab lane alone: in .venv-colab (made here), every lesson and solution on the CPU, the widget
# and quiz tests, a student's self-check grading; the setup cell as Colab runs it. make test runs it
# too, beside the rest (and the simulated T4 in .venv-colab); there the lessons and solutions run
# under nbval in .venv-colab only.
test-colab: $(VENV)/.installed colab-venv
	$(VENV)/bin/python -m pytest tests/e2e/test_colab.py

# Every lesson under nbval, every panel, every solution and exercise graded, on GPULAB_SIMULATE=t4 (in
# .venv-colab: the T4 is Colab's GPU) and =4xh100.
test-simulated: $(VENV)/.installed
	$(VENV)/bin/python -m pytest tests/e2e/test_simulated_course.py

# The oldest torch is pyproject.toml's floor; the newest, the newest release (torch wheels are
# downloaded once into ~/.cache/gpulab/wheels).
TORCH_OLDEST := $(shell sed -n 's/^ *"torch>=\([0-9.]*\)",/\1/p' pyproject.toml)
TORCH_NEWEST ?= 2.15.0

test-versions:
	tools/test-versions.sh $(TORCH_OLDEST) $(TORCH_NEWEST)

# The GPU runner: tools/gpu-runner/parts.py runs PART (default all: every part, most valuable first), each
# under GPU_PART_LIMIT_S, into $(GPU_OUT)/PART/ (logs, records, result.txt); `parts.py --help` lists the
# parts. GPU_PYTHON is the Python to test with: .venv's by default; on a prepared offline machine
# tools/gpu-runner/run.sh calls parts.py with its own. BENCH_OUT, if set, is where the bench's records go.
GPU_PYTHON ?= $(VENV)/bin/python
GPU_OUT ?= gpu-run
PART ?= all
GPU_PART_LIMIT_S ?= 480
BENCH_OUT ?=

test-gpu: $(if $(filter $(VENV)/bin/python,$(GPU_PYTHON)),$(VENV)/.installed)
	$(if $(shell $(GPU_PYTHON) -c 'import torch; print(torch.cuda.is_available() or "")' 2>/dev/null),,$(error make test-gpu needs a CUDA GPU, and $(GPU_PYTHON)'s torch finds none on this machine))
	$(GPU_PYTHON) tools/gpu-runner/parts.py $(GPU_OUT) $(PART) --limit $(GPU_PART_LIMIT_S) $(if $(BENCH_OUT),--bench-out $(BENCH_OUT))

# The website: tools/site/build.py executes every lesson and exercise notebook (GPULAB_STATIC=1: each panel
# and figure as an image with its text alternative, each quiz as HTML that needs no kernel) into
# build/site-source/, then Sphinx renders it with tools/site/conf.py. .github/workflows/pages.yml publishes it.
site: $(VENV)/.installed
	$(VENV)/bin/python tools/site/build.py

clean:
	rm -rf $(VENV) $(VENV_COLAB) .venv-torch-* build site src/*.egg-info
