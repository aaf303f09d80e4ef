# nlq — every target installs what it needs into .venv first.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEMO    := out/demo
WORLDS  := fixtures/worlds

.PHONY: install test demo bench calibrate fixtures docs check clean

$(STAMP): setup.cfg pyproject.toml
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

docs: $(STAMP)
	$(BIN)/python -m tests.readme

check: test

demo: $(STAMP)
	@mkdir -p $(DEMO)
	$(BIN)/nlq index --data $(WORLDS) -o $(DEMO)/index.jsonl
	cat fixtures/tasks/*.jsonl \
	  | $(BIN)/nlq witness --index $(DEMO)/index.jsonl \
	  | $(BIN)/nlq generate --method rules --index $(DEMO)/index.jsonl \
	  | $(BIN)/nlq score --data $(WORLDS) -o $(DEMO)/rules.scored.jsonl
	$(BIN)/nlq report $(DEMO)/rules.scored.jsonl --by db --by labels.schema_flex --by labels.anti_sql

clean:
	rm -rf $(VENV) out .hypothesis
