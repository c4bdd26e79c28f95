# make lab  — set up .venv if needed and start JupyterLab on the lessons
# make test — set up .venv if needed and run every test (also under Colab's ipywidgets 7.7.1)

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

.PHONY: lab test test-colab clean

# A venv is rebuilt from its stamp's prerequisites: change pyproject.toml or a constraints
# file and the next make brings it up to date; otherwise it is reused as it is.
$(VENV)/.installed: pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "gpulab needs Python 3.10 or newer"; exit 1; }
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) -c constraints.txt -e ".[dev]"
	@touch $@

$(VENV_COLAB)/.installed: pyproject.toml constraints-colab.txt
	@test -x $(VENV_COLAB)/bin/python || $(PYTHON) -m venv $(VENV_COLAB)
	$(VENV_COLAB)/bin/python -m pip install $(PIP_FLAGS) -c constraints-colab.txt -e ".[test]"
	@touch $@

lab: $(VENV)/.installed
	$(VENV)/bin/jupyter lab $(LAB_FLAGS) notebooks

test: $(VENV)/.installed $(VENV_COLAB)/.installed
	$(VENV)/bin/python -m pytest
	$(MAKE) --no-print-directory test-colab

test-colab: $(VENV_COLAB)/.installed
	$(VENV_COLAB)/bin/python -m pytest tests/test_widgets.py tests/test_quiz.py notebooks

clean:
	rm -rf $(VENV) $(VENV_COLAB) build src/*.egg-info
