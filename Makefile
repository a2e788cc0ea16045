# The course in two commands: `make lectures` and `make test`. Each bootstraps .venv/ when missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
KERNEL := tf-perf-course

.PHONY: lectures test test-all test-slow test-browser lab kernel clean constraints

# constraints.txt pins every package to the versions the suite last passed with, per Python
# (`make constraints` writes it from the venvs CI makes; .ci/constraints.py says how).
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	touch $(STAMP)

# The lowest, the development and the highest Python's venvs (each made by `make` with that PYTHON and VENV).
CONSTRAINT_VENVS ?= .venv-low .venv .venv-high
constraints:
	$(BIN)/python .ci/constraints.py $(foreach v,$(CONSTRAINT_VENVS),$(v)/bin/python) > constraints.txt.new
	mv constraints.txt.new constraints.txt

# The environment's kernels keep TensorFlow's C++ log out of notebooks (course_lib/kernel.py).
kernel: $(STAMP)
	$(BIN)/python -m ipykernel install --user --name $(KERNEL) --display-name "TF performance course" >/dev/null
	$(BIN)/python -c "from course_lib import kernel; kernel.write_config()"

lectures: $(STAMP) kernel
	$(BIN)/course lectures

# `make test` leaves the tests marked slow (conftest.py) to `make test-all`, which runs every test;
# `make test-slow` runs only those (CI runs it beside `make test`, .ci/run).
test: MARKS := -m "not slow"
test-slow: MARKS := -m slow
test test-all test-slow: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest $(MARKS)

# `make test-all` checks lecture 00's widget in the browser; this checks every widget lecture.
test-browser: $(STAMP)
	COURSE_BROWSER_LECTURES=all $(BIN)/python -m pytest tests/test_browser.py

# Extra `jupyter lab` options, e.g. `make lab LAB_ARGS=--no-browser`; JUPYTER_PORT and JUPYTER_TOKEN
# in the environment pick the port and the token (tests/test_browser.py sets all three).
# Jupyter refuses to run as root unless told; containers and CI often are root.
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(STAMP) kernel
	$(BIN)/jupyter lab notebooks $(LAB_ARGS)

clean:
	rm -rf build
