# `make demo` and `make test` set everything up on a fresh machine (Python >= 3.10 and pip).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NOW    ?= 2026-12-02T09:00:00

.PHONY: demo test test-fast lint docs reliability bench postgres clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[local,agent,mcp,postgres,postgres-server,test,lint,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/enhanced-memory index --workspace examples/workspace
	$(BIN)/enhanced-memory search --workspace examples/workspace --now $(NOW) "what did we decide about the database migration?"
	$(BIN)/enhanced-memory search --workspace examples/workspace --now $(NOW) "what did I do yesterday?" --k 3
	$(BIN)/enhanced-memory search --workspace examples/workspace --now $(NOW) "上周一 星河项目 讨论了什么" --k 3 --json

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The unit tests only (sockets off, no PostgreSQL, no model): about 36 s of CPU, while editing.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit_tests

lint: $(STAMP)
	$(BIN)/ruff check langchain_enhanced_memory tests benchmarks examples scripts
	$(BIN)/ruff format --check langchain_enhanced_memory tests benchmarks examples scripts
	$(BIN)/mypy
	$(BIN)/lint-imports

# The documentation site (docs/, mkdocs.yml) into site/; --strict fails on a broken link.
# The command-line reference (docs/cli.md) is generated from the parsers first.
docs: $(STAMP)
	$(BIN)/python docs/gen_cli.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# Fault injection (kills, embedder faults, concurrency, hostile input, fuzzing): prints the table of docs/reliability.md.
reliability: $(STAMP)
	$(BIN)/python benchmarks/reliability.py

# Speed and scale (1k/10k/100k synthetic chunks and 100k transcript turns, about 13 minutes):
# prints the tables of docs/benchmarks.md. SIZES=1000,10000 TURNS= for a quicker run.
SIZES ?= 1000,10000,100000
TURNS ?= 100000
bench: $(STAMP)
	$(BIN)/python benchmarks/speed.py --sizes $(SIZES) --turns "$(TURNS)"

# A local PostgreSQL 18 with pgvector in .postgres/ for trying shared memory (not for the tests):
# prints the ENHANCED_MEMORY_DATABASE_URL to export; Ctrl-C stops it, the data stays for next time.
postgres: $(STAMP)
	$(BIN)/python scripts/postgres.py --dir .postgres

# The demo's searches start a resident engine: stop it before its index goes (no venv: none to stop).
# Then what the README's examples leave in examples/workspace: the index, logs, locks, the
# installed skill and the daily note `remember` starts (only one git does not track).
EXAMPLE := examples/workspace
clean:
	-[ ! -x $(BIN)/enhanced-memory ] || $(BIN)/enhanced-memory daemon stop --workspace $(EXAMPLE)
	rm -rf $(VENV) $(EXAMPLE)/.enhanced-memory $(EXAMPLE)/skills $(EXAMPLE)/memory/items
	rm -f $(EXAMPLE)/memory/query_log.json $(EXAMPLE)/memory/access_log.json \
	    $(EXAMPLE)/memory/.enhanced-memory-logs.lock $(EXAMPLE)/memory/.enhanced-memory-notes.lock
	-git ls-files -z --others -- '$(EXAMPLE)/memory/[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].md' \
	    | xargs -0 rm -f
