# burstlake — two commands: `make demo` and `make test`. Both build .venv from nothing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
LAKE   ?= lake

export GX_ANALYTICS_ENABLED := false
export PYSPARK_PYTHON := $(abspath $(BIN)/python)

.PHONY: venv demo test test-fast bench lint airflow clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: venv
	$(BIN)/burstlake demo --lake $(LAKE)

test: venv
	$(BIN)/python -m pytest -q

test-fast: venv
	$(BIN)/python -m pytest -q -m "not slow"

bench: venv
	$(BIN)/python -m bench

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

airflow: venv
	. infra/airflow.env && $(BIN)/airflow standalone

clean:
	rm -rf $(VENV) $(LAKE) bench/results
