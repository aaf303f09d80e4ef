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

.PHONY: install test fuzz demo bench calibrate calibrate-memory fixtures docs check clean browser wire select-fit

$(STAMP): setup.cfg setup.py pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# `make test`: everything but the suites marked slow (end-to-end runs of make paper, the wheel in a fresh
# venv, long property and deadline suites); `make check` runs them all, after the linter.
test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" tests

# The hostile-input property suite with many more examples than `make test` runs (FUZZ_EXAMPLES per property).
FUZZ_EXAMPLES ?= 200
fuzz: $(STAMP)
	NLQ_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest tests/test_fuzz.py tests/test_hardening.py tests/test_hardening_engine.py tests/test_robustness.py \
	  tests/test_fuzz_untrusted.py \
	  tests/test_fuzz_llm.py

bench: $(STAMP)
	$(BIN)/python -m tests.bench

calibrate: $(STAMP)
	$(BIN)/python -m tests.bench.calibrate_rules

# The memory candidate's calibration (nlq/memory/calibration.json), fitted on both TEND v1 splits.
calibrate-memory: $(STAMP)
	$(BIN)/python -m tests.bench.bench_memory --fit --no-repair

# The selection model of `nlq repair` (nlq/selection.json), fitted on runs over data with gold
# (the first run's records carry the gold): every candidate executed once into SELECT_CACHE, then
# the logistic fit, with its leave-one-database-out figures printed (docs/SELECTION.md).
SELECT_DATA  ?= ../shared/tend-v1/mongodb_data
SELECT_RUNS  ?= out/selection/kimi.jsonl out/selection/kimi-sql-pivot.jsonl out/selection/rules.jsonl  # as bench_selection builds them
SELECT_INDEX ?= out/selection/index.jsonl
SELECT_CACHE ?= out/selection/evidence.jsonl
SELECT_SINGLE ?= out/selection/train-a/evidence.jsonl  # rules --candidates on train-a (python -m tests.bench selection)
select-fit: $(STAMP)
	@mkdir -p out/selection
	test -f $(SELECT_CACHE) || nice $(BIN)/python -m tests.bench.select_fit cache --data $(SELECT_DATA) \
	  --index $(SELECT_INDEX) $(SELECT_RUNS) -o $(SELECT_CACHE)
	nice $(BIN)/python -m tests.bench.select_fit fit $(SELECT_CACHE) --no-alternatives --single rules \
	  $(if $(wildcard $(SELECT_SINGLE)),--single-also $(SELECT_SINGLE)) -o nlq/selection.json

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

# ---------------------------------------------------------------------------
# Reproducing the paper (Tables III-V): `make paper TASKS=... DATA=...|URI=... MODEL=... BASE_URL=...`.
# Each arm is a file target: an interrupted run resumes (finished files are kept, a file is
# written under a temporary name and renamed when complete) and every model reply is cached in
# CACHE, so a rerun makes no model call. `make paper JOBS=4` runs arms in parallel.
OUT      ?= out/paper
TASKS    ?= $(OUT)/fixture-tasks.jsonl
DATA     ?= $(WORLDS)
URI      ?=
MODEL    ?=
BASE_URL ?=
JOBS     ?= 4
CACHE    ?= $(OUT)/llm.sqlite
NLQ      := $(abspath $(BIN))/nlq
# One backend for every command, through the environment (URI wins when both are given).
ifneq ($(URI),)
PAPER_ENV := NLQ_URI='$(URI)' NLQ_DATA=
else
PAPER_ENV := NLQ_DATA='$(DATA)' NLQ_URI=
endif
PAPER_ENV += NLQ_CACHE='$(CACHE)'
# No memory of verified answers unless asked (MEMORY=FILE): the paper's methods keep nothing between questions.
MEMORY   ?=
PAPER_ENV += NLQ_MEMORY='$(MEMORY)'
# BUDGET=calls=N,tokens=M caps each arm's new model calls (a capped arm exits 1 and keeps its .part
# file; a rerun resumes from CACHE).
ifneq ($(BUDGET),)
PAPER_ENV += NLQ_BUDGET='$(BUDGET)'
endif
# Every arm runs in the paper's profile (docs/REPRODUCTION.md), the reasoning effort passed through as
# the request's `reasoning_effort`; the `sag-nlq` arm is the full solver in this toolkit's profile.
PROFILE   ?= paper
REASONING ?= max
PAPER_ENV += NLQ_PROFILE='$(PROFILE)'
GEN_FLAGS := $(if $(REASONING),--reasoning-effort $(REASONING))
ifneq ($(MODEL),)
PAPER_ENV += NLQ_MODEL='$(MODEL)'
endif
ifneq ($(BASE_URL),)
PAPER_ENV += NLQ_BASE_URL='$(BASE_URL)'
endif

# Table III: the seven arms. Table V: the cumulative ladder, the knockouts, the compute-matched
# control and the output-contract arm (DIA's shape declaration added to the full solver).
MAIN_ARMS     ?= nlq-only schema sampled data-rich sql-pivot react sag sag-nlq
LADDER_ARMS   ?= card gated-repair value-bisection sag
KNOCKOUT_ARMS ?= sag-batch no-gate no-witnesses no-bisection top-level-card no-collapse
# The paper's task subsets: the knockouts (and their same-batch full solver) on financial+superhero,
# the compute-matched control on financial/superhero/toxicology (empty: every task).
KNOCKOUT_DBS  ?= financial superhero
CONTROL_DBS   ?= financial superhero toxicology
CONTROL_ARMS  ?= control
ADDED_ARMS    ?= contract
PAPER_REF     ?= sag
ABLATION_ARMS ?= $(LADDER_ARMS) $(KNOCKOUT_ARMS) $(CONTROL_ARMS) $(ADDED_ARMS)
# How each arm is generated (`nlq generate` options after --index). The ladder's rungs are the
# paper's cumulative ones: `card` is the card alone (no witnesses), one ungated decode.
GEN_rules           := --method rules
GEN_nlq-only        := --method nlq-only
GEN_schema          := --method schema
GEN_sampled         := --method sampled
GEN_data-rich       := --method data-rich
GEN_sql-pivot       := --method sql-pivot
GEN_react           := --method react
GEN_sag             := --method sag
GEN_card            := --method sag --ladder card
GEN_gated-repair    := --method sag --ladder gated-repair
GEN_value-bisection := --method sag --ladder value-bisection
GEN_no-gate         := --method sag --no-gate
GEN_no-witnesses    := --method sag --no-witnesses
GEN_no-bisection    := --method sag --no-bisection
GEN_top-level-card  := --method sag --card top-level
GEN_no-collapse     := --method sag --card no-collapse
GEN_contract        := --method sag --contract
GEN_sag-nlq         := --method sag --profile nlq --index $(OUT)/index.nlq.jsonl
GEN_sag-batch       := --method sag
# A run's row name in the tables (default: the arm).
NAME_sag-nlq        := sag (nlq profile)
NAME_sag-batch      := sag (same batch)
# The compute-matched control (§IV-D): the strongest one-shot arm, CONTROL, drawn three times (its
# own run and two more draws, `--draw N`: a cache key only, no request seed, as the paper's control),
# voted in result space by `nlq repair` with no gate and no model: exactly SAG's k=3 selection rule
# without the admissibility gate.
CONTROL       ?= data-rich
CONTROL_SEEDS ?= 1 2

# Across machines: `make paper SHARD=i/N` on each (a stable split of the tasks by record id; its runs go to
# $(OUT)/shard-i-of-N), then `make paper-join SHARDS=N` where the shards' folders meet: the joined scored
# files and the tables equal those of one unsharded run. LEDGER=mongodb://... also shares which record of
# which arm is done (leases of LEASE seconds), so runners on one shard, or a restarted one, skip finished work.
SHARD    ?=
SHARDS   ?=
LEDGER   ?=
LEASE    ?= 900
RUN_DIR  := $(OUT)$(if $(SHARD),/shard-$(subst /,-of-,$(SHARD)))
LEDGER_FLAGS = $(if $(LEDGER),--ledger '$(LEDGER)' --arm $(1) --lease $(LEASE))
PAPER_RUNS     := $(RUN_DIR)/runs
MAIN_SCORED    := $(patsubst %,$(PAPER_RUNS)/%.scored.jsonl,$(MAIN_ARMS))
ABLATION_SCORED := $(patsubst %,$(PAPER_RUNS)/%.scored.jsonl,$(ABLATION_ARMS))
REPORT_ARGS    ?= --bootstrap 1000 --seed 0

.PHONY: paper paper-main paper-ablation paper-shard paper-join
.PRECIOUS: $(PAPER_RUNS)/%.pred.jsonl $(PAPER_RUNS)/control.seed%.pred.jsonl  # a resume reuses them

paper-main: $(OUT)/table3.txt
paper-ablation: $(OUT)/table5.txt
paper: $(STAMP)
	$(MAKE) -j$(JOBS) $(if $(SHARD),paper-shard,paper-main paper-ablation)

# One shard's scored runs (no tables: those come from the join).
paper-shard: $(MAIN_SCORED) $(ABLATION_SCORED)

paper-join: | $(STAMP)
	$(if $(SHARDS),,$(error paper-join needs SHARDS=N, the number of shards the runs were split into))
	@mkdir -p $(OUT)/runs
	for arm in $(sort $(MAIN_ARMS) $(ABLATION_ARMS)); do \
	  $(NLQ) shard join --order $(TASKS) $(foreach i,$(shell seq 1 $(SHARDS)),$(OUT)/shard-$(i)-of-$(SHARDS)/runs/$$arm.scored.jsonl) \
	    -o $(OUT)/runs/$$arm.scored.jsonl || exit 1; \
	done
	$(call table3,$(MAIN_SCORED))
	$(call table5,$(ABLATION_SCORED))

$(OUT)/fixture-tasks.jsonl: $(wildcard fixtures/tasks/*.jsonl)
	@mkdir -p $(@D)
	cat $^ > $@.part && mv $@.part $@

$(OUT)/index.jsonl: | $(STAMP)
	@mkdir -p $(@D)
	$(PAPER_ENV) $(NLQ) index -o $@.part && mv $@.part $@

$(OUT)/index.nlq.jsonl: | $(STAMP)
	@mkdir -p $(@D)
	$(PAPER_ENV) $(NLQ) index --profile nlq -o $@.part && mv $@.part $@

# A shard's tasks (all of them without SHARD), witnessed.
SHARD_TASKS = $(if $(SHARD),$(NLQ) shard select $(SHARD) $(TASKS) | ,)
SHARD_INPUT = $(if $(SHARD),-,$(TASKS))

$(RUN_DIR)/witnessed.jsonl: $(TASKS) $(OUT)/index.jsonl
	@mkdir -p $(@D)
	$(SHARD_TASKS)$(PAPER_ENV) $(NLQ) witness --index $(OUT)/index.jsonl $(SHARD_INPUT) -o $@.part && mv $@.part $@

$(RUN_DIR)/witnessed.nlq.jsonl: $(TASKS) $(OUT)/index.nlq.jsonl
	@mkdir -p $(@D)
	$(SHARD_TASKS)$(PAPER_ENV) $(NLQ) witness --profile nlq --index $(OUT)/index.nlq.jsonl $(SHARD_INPUT) \
	  -o $@.part && mv $@.part $@

$(PAPER_RUNS)/sag-nlq.pred.jsonl: $(RUN_DIR)/witnessed.nlq.jsonl $(OUT)/index.nlq.jsonl
	@mkdir -p $(@D)
	$(PAPER_ENV) $(NLQ) generate $(GEN_sag-nlq) $(GEN_FLAGS) $(call LEDGER_FLAGS,sag-nlq) $< -o $@.part && mv $@.part $@

$(PAPER_RUNS)/%.pred.jsonl: $(RUN_DIR)/witnessed.jsonl $(OUT)/index.jsonl
	@mkdir -p $(@D)
	$(if $(GEN_$*),,$(error arm '$*' has no GEN_$* (known arms: $(patsubst GEN_%,%,$(filter GEN_%,$(.VARIABLES))))))
	$(PAPER_ENV) $(NLQ) generate --index $(OUT)/index.jsonl $(GEN_$*) $(GEN_FLAGS) $(call LEDGER_FLAGS,$*) $< \
	  -o $@.part && mv $@.part $@

# The tasks of a subset of databases (all of them when the list is empty).
SUBSET = $(abspath $(BIN))/python -c "import json, sys; keep = set(sys.argv[2:]); \
  sys.stdout.buffer.writelines(l for l in open(sys.argv[1], 'rb') if l.strip() and (not keep or json.loads(l).get('db') in keep))"

$(RUN_DIR)/witnessed.knockout.jsonl: $(RUN_DIR)/witnessed.jsonl
	$(SUBSET) $< $(KNOCKOUT_DBS) > $@.part && mv $@.part $@

$(RUN_DIR)/witnessed.control.jsonl: $(RUN_DIR)/witnessed.jsonl
	$(SUBSET) $< $(CONTROL_DBS) > $@.part && mv $@.part $@

define knockout_rule
$(PAPER_RUNS)/$(1).pred.jsonl: $(RUN_DIR)/witnessed.knockout.jsonl $(OUT)/index.jsonl
	@mkdir -p $$(@D)
	$$(PAPER_ENV) $$(NLQ) generate --index $(OUT)/index.jsonl $$(GEN_$(1)) $$(GEN_FLAGS) $$(call LEDGER_FLAGS,$(1)) $$< \
	  -o $$@.part && mv $$@.part $$@
endef
$(foreach a,$(KNOCKOUT_ARMS),$(eval $(call knockout_rule,$(a))))

# draw 0 is the CONTROL arm's own requests (replayed from the cache), draws 1 and 2 the others
$(PAPER_RUNS)/control.seed%.pred.jsonl: $(RUN_DIR)/witnessed.control.jsonl $(OUT)/index.jsonl
	@mkdir -p $(@D)
	$(PAPER_ENV) $(NLQ) generate --index $(OUT)/index.jsonl $(GEN_$(CONTROL)) $(GEN_FLAGS) --draw $* \
	  $(call LEDGER_FLAGS,control.seed$*) $< -o $@.part && mv $@.part $@

$(PAPER_RUNS)/control.pred.jsonl: $(PAPER_RUNS)/control.seed0.pred.jsonl \
    $(patsubst %,$(PAPER_RUNS)/control.seed%.pred.jsonl,$(CONTROL_SEEDS)) $(OUT)/index.jsonl
	$(PAPER_ENV) $(NLQ) repair --no-model --no-gate --knockouts nlq --select vote --index $(OUT)/index.jsonl $< \
	  $(patsubst %,--runs $(PAPER_RUNS)/control.seed%.pred.jsonl,$(CONTROL_SEEDS)) -o $@.part && mv $@.part $@

$(PAPER_RUNS)/%.scored.jsonl: $(PAPER_RUNS)/%.pred.jsonl
	$(PAPER_ENV) $(NLQ) score $< -o $@.part && mv $@.part $@

# table3.*: Tables III and IV (the claim-axis slices) in the paper's layout; table5.*: Table V.
# Each run is named by its NAME_<arm>, else the arm.
MAIN_NAMES     = $(foreach a,$(MAIN_ARMS),--name '$(or $(NAME_$(a)),$(a))')
ABLATION_NAMES = $(foreach a,$(ABLATION_ARMS),--name '$(or $(NAME_$(a)),$(a))')
# The tables from scored files (a recipe of its own: `paper-join` builds them from joined shards too).
define table3
	$(NLQ) report $(1) $(MAIN_NAMES) --layout paper --ref $(PAPER_REF) --width 100 $(REPORT_ARGS) -o $(OUT)/table3.txt.part
	$(NLQ) report $(1) $(MAIN_NAMES) --layout paper --ref $(PAPER_REF) --format markdown $(REPORT_ARGS) \
	  -o $(OUT)/table3.md
	$(NLQ) report $(1) $(MAIN_NAMES) --layout paper --ref $(PAPER_REF) --format latex $(REPORT_ARGS) -o $(OUT)/table3.tex
	$(NLQ) report $(1) $(MAIN_NAMES) --layout paper --ref $(PAPER_REF) --format html $(REPORT_ARGS) -o $(OUT)/table3.html
	mv $(OUT)/table3.txt.part $(OUT)/table3.txt
endef
define table5
	$(NLQ) report $(1) $(ABLATION_NAMES) --layout paper --ref $(PAPER_REF) --by db --width 100 $(REPORT_ARGS) \
	  -o $(OUT)/table5.txt.part
	$(NLQ) report $(1) $(ABLATION_NAMES) --layout paper --ref $(PAPER_REF) --by db --format markdown $(REPORT_ARGS) \
	  -o $(OUT)/table5.md
	$(NLQ) report $(1) $(ABLATION_NAMES) --layout paper --ref $(PAPER_REF) --by db --format latex $(REPORT_ARGS) \
	  -o $(OUT)/table5.tex
	mv $(OUT)/table5.txt.part $(OUT)/table5.txt
endef

$(OUT)/table3.txt: $(MAIN_SCORED)
	$(call table3,$^)

$(OUT)/table5.txt: $(ABLATION_SCORED)
	$(call table5,$^)
