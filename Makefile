# nlq — every target installs what it needs into .venv first.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEMO    := out/demo
WORLDS  := fixtures/worlds

.PHONY: install test demo bench calibrate fixtures docs check clean browser

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
	rm -rf $(VENV) out .hypothesis
