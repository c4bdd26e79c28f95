# make lab      — set up .venv if needed and start JupyterLab on the lessons
#                 (GPULAB_SIMULATE=t4 make lab: the same on a simulated T4; 4xh100 for a node of four H100s)
# make test     — set up .venv if needed and run every test (also under Colab's ipywidgets 7.7.1)
# make test-simulated — only the whole course on a simulated T4 and a node of four H100s (part of make test)
# make test-gpu — on a CUDA machine: every test with no CUDA test skipped, then reference records

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

.PHONY: lab test test-colab test-simulated test-gpu clean

# A venv is rebuilt from its stamp's prerequisites: change pyproject.toml or a constraints
# file and the next make brings it up to date; otherwise it is reused as it is.
$(VENV)/.installed: pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "gpulab needs Python 3.10 or newer"; exit 1; }
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) -c constraints.txt -e ".[dev]"
	$(VENV)/bin/python -m gpulab.simulated.hook --install
	@touch $@

$(VENV_COLAB)/.installed: pyproject.toml constraints-colab.txt
	@test -x $(VENV_COLAB)/bin/python || $(PYTHON) -m venv $(VENV_COLAB)
	$(VENV_COLAB)/bin/python -m pip install $(PIP_FLAGS) -c constraints-colab.txt -e ".[test]"
	$(VENV_COLAB)/bin/python -m gpulab.simulated.hook --install
	@touch $@

lab: $(VENV)/.installed
	$(VENV)/bin/jupyter lab $(LAB_FLAGS) notebooks

test: $(VENV)/.installed $(VENV_COLAB)/.installed
	$(VENV)/bin/python -m pytest
	$(MAKE) --no-print-directory test-colab

# Every panel and quiz is made of gpulab.widgets and gpulab.quiz: their tests, and one whole lesson,
# run again under Colab's ipywidgets 7.7.1.
test-colab: $(VENV_COLAB)/.installed
	$(VENV_COLAB)/bin/python -m pytest tests/test_widgets.py tests/test_quiz.py notebooks/01_devices.ipynb

# Every lesson and solution under nbval, every panel and every grading, on GPULAB_SIMULATE=t4 and =4xh100.
test-simulated: $(VENV)/.installed
	$(VENV)/bin/python -m pytest tests/test_simulated_course.py

# The GPU runner. GPU_PYTHON is the Python to test with: .venv's by default; on a prepared offline
# machine tools/gpu-runner/run.sh passes its own. PYTEST_ARGS narrows the suite when needed.
GPU_PYTHON ?= $(VENV)/bin/python
BENCH_OUT ?= bench-results
PYTEST_ARGS ?=

test-gpu: $(if $(filter $(VENV)/bin/python,$(GPU_PYTHON)),$(VENV)/.installed)
	$(if $(shell $(GPU_PYTHON) -c 'import torch; print(torch.cuda.is_available() or "")' 2>/dev/null),,$(error make test-gpu needs a CUDA GPU, and $(GPU_PYTHON)'s torch finds none on this machine))
	GPULAB_REQUIRE_CUDA=1 $(GPU_PYTHON) -m pytest $(PYTEST_ARGS)
	$(GPU_PYTHON) -m gpulab bench $(BENCH_OUT)

clean:
	rm -rf $(VENV) $(VENV_COLAB) build src/*.egg-info
