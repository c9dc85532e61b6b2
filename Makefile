# Two entry points (docs/DEVELOPING.md): `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DEMO_TABLE ?= sample_logs/quickstart/table

.PHONY: demo test test-live jars install dev clean bench docs install-check

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
	$(BIN)/python -m pytest -q -m "not live" -n 2 --dist loadfile --durations=15

# delta-spark's jars (the artifact the installed delta-spark package names) and Hadoop's S3A connector
# (matched to pyspark's Hadoop), fetched once with Maven into $(JARS_DIR) (kept between runs); the live
# tests run delta-spark itself (forensics/runtime/delta_jvm.py) and a cluster reading S3
# (forensics/storage/connectors.py).
JARS_DIR ?= .cache/jars
jars: $(VENV)/.installed-dev
	@c=$$($(BIN)/python -m forensics.runtime.delta_jvm) && a=$$(echo $$c | cut -d: -f2) && v=$$(echo $$c | cut -d: -f3) && \
	d=$(abspath $(JARS_DIR))/$$a-$$v && { test -f $$d/$$a-$$v.jar || mvn -q -f scripts/jvm/pom.xml dependency:copy-dependencies \
	  -Ddelta.artifact=$$a -Ddelta.version=$$v -DoutputDirectory=$$d; } && echo $$d > $(JARS_DIR)/current
	@h=$$($(BIN)/python -c "from forensics.storage.connectors import hadoop_version; print(hadoop_version())") && \
	d=$(abspath $(JARS_DIR))/s3a-hadoop-$$h && { test -f $$d/hadoop-aws-$$h.jar || { \
	  sed "s/@HADOOP_VERSION@/$$h/g" scripts/jvm/s3a.xml > $(JARS_DIR)/s3a-pom.xml && \
	  mvn -q -f $(JARS_DIR)/s3a-pom.xml dependency:copy-dependencies -DoutputDirectory=$$d; }; } && echo $$d > $(JARS_DIR)/s3a-current

test-live: jars
	DELTA_FORENSICS_DELTA_JARS=$$(cat $(JARS_DIR)/current) DELTA_FORENSICS_STORE_JARS=$$(cat $(JARS_DIR)/s3a-current) \
	  $(BIN)/python -m pytest -q -m live --durations=15

# The documentation site (mkdocs.yml, docs/): --strict (never with --quiet: it hides the warnings
# --strict counts) fails on a broken link or anchor, a missing
# page and a public name without a docstring (mkdocstrings). The site is written to .cache/site.
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The wheel, installed into a fresh venv (pip's cache; this venv's versions as constraints) and run
# from outside the checkout: `--version`, `history`, `schema`, `completion` (tests/test_install.py).
install-check: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -m live tests/test_install.py

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
