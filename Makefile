# Two entry points (README Quickstart): `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DEMO_TABLE ?= sample_logs/quickstart/table

.PHONY: demo test install dev clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(BIN)/delta-forensics history $(DEMO_TABLE)
	$(BIN)/delta-forensics replay sample_logs/b-writeserializable-reorder/table
	$(BIN)/delta-forensics explain sample_logs/b-writeserializable-reorder/table 3

test: $(VENV)/.installed-dev
	-$(BIN)/python -m forensics.runtime.jvm_archive $(DEMO_TABLE)
	@grep -qs '"version": "3.35.0"' .cache/node/node_modules/azurite/package.json || npm install --no-save --no-audit --no-fund --prefix .cache/node azurite@3.35.0 >/dev/null || echo "warning: could not install Azurite 3.35.0 with npm; the Azure storage tests will fail under CI"
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
