# nlq — every target installs what it needs into .venv first.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEMO    := out/demo
WORLDS  := fixtures/worlds
# SecantusDB (GPL-2.0) is a test instrument for `make wire`: its own venv, never an nlq dependency.
WIRE    := .venv-wire
SECANTUS ?= secantusdb==0.7.0b3

.PHONY: install test demo bench calibrate fixtures docs check clean browser wire

$(STAMP): setup.cfg setup.py pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest tests

bench: $(STAMP)
	$(BIN)/python -m tests.bench

calibrate: $(STAMP)
	$(BIN)/python -m tests.bench.calibrate_rules

fixtures: $(STAMP)
	$(BIN)/python fixtures/generate.py

$(WIRE)/.installed:
	test -x $(WIRE)/bin/python || $(PY) -m venv $(WIRE)
	$(WIRE)/bin/python -m pip install -q '$(SECANTUS)'
	touch $(WIRE)/.installed

wire: $(STAMP) $(WIRE)/.installed
	$(BIN)/python -m tests.secantus.run --server $(WIRE)/bin/secantusd-py

docs: $(STAMP)
	$(BIN)/python -m tests.readme

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest tests

demo: $(STAMP)
	@mkdir -p $(DEMO)
	$(BIN)/nlq index --data $(WORLDS) -o $(DEMO)/index.jsonl
	cat fixtures/tasks/*.jsonl \
	  | $(BIN)/nlq witness --index $(DEMO)/index.jsonl \
	  | $(BIN)/nlq generate --method rules --index $(DEMO)/index.jsonl \
	  | $(BIN)/nlq score --data $(WORLDS) -o $(DEMO)/rules.scored.jsonl
	$(BIN)/nlq report $(DEMO)/rules.scored.jsonl --by db --by labels.schema_flex --by labels.anti_sql
	$(BIN)/nlq report $(DEMO)/rules.scored.jsonl --by db --by labels.schema_flex --by labels.anti_sql \
	  --format html -o $(DEMO)/report.html
	@echo "wrote $(DEMO)/report.html"

# Headless Chromium (Debian's package) for the browser test of the HTML report.
browser:
	command -v chromium >/dev/null || { timeout 900 apt-get update -qq && timeout 900 apt-get install -y -qq chromium; }

clean:
	rm -rf $(VENV) $(WIRE) out .hypothesis
