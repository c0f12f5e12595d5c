# The two commands that matter: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev

.PHONY: test demo demo-wire bench lint typecheck unit integration clean core

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The compiled record core, rebuilt in place when its C source changed (the editable install
# builds it once; without a C compiler this logs one line and the pure-Python core is used).
core: $(STAMP)
	$(PY) setup.py -q build_ext --inplace

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict src tests

unit: $(STAMP) core
	$(VENV)/bin/pytest -q tests/unit

integration: $(STAMP) core
	$(VENV)/bin/pytest -q tests/integration

test: lint typecheck $(STAMP) core
	$(VENV)/bin/pytest -q tests

# The pipeline demo: a local Spark session writes the NYC 2013 flights through the kafkaline
# data source to an embedded broker and reads them back. `make demo-wire` is the raw-layer demo.
demo: $(STAMP) core
	$(VENV)/bin/kafkaline demo

demo-wire: $(STAMP) core
	$(PY) -m kafkaline.testing.demo

bench: $(STAMP) core
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) -m benchmarks
	$(PY) -m benchmarks.spark_bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build src/*.egg-info
	rm -f src/kafkaline/_record_core.*.so
