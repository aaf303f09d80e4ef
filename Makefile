# nlq — every target installs what it needs into .venv first.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEMO    := out/demo
WORLDS  := fixtures/worlds

.PHONY: install test demo bench fixtures check clean

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

fixtures: $(STAMP)
	$(BIN)/python fixtures/generate.py

check: test

demo: $(STAMP)
	@mkdir -p $(DEMO)
	@for db in $$(ls $(WORLDS)); do \
	  $(BIN)/nlq index --data $(WORLDS) --db $$db -o $(DEMO)/$$db.index.jsonl || exit 1; \
	  $(BIN)/nlq witness --index $(DEMO)/$$db.index.jsonl fixtures/tasks/$$db.jsonl \
	    | $(BIN)/nlq generate --method rules --index $(DEMO)/$$db.index.jsonl \
	    | $(BIN)/nlq score --data $(WORLDS) -o $(DEMO)/$$db.scored.jsonl || exit 1; \
	done
	$(BIN)/nlq report $(DEMO)/*.scored.jsonl --by db --by labels.schema_flex

clean:
	rm -rf $(VENV) out .hypothesis
