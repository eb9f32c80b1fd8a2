# The two commands a newcomer needs: `make run` and `make test`. Both create .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Installs go through uv (pinned, put into .venv by pip first): the dev tools, the SAM CLI and Checkov in
# 15 to 30 s (as the network allows) instead of pip's 200 s. Its cache is kept inside .venv, like
# everything make installs. What it installs into .venv itself is compiled to bytecode once, there: every
# interpreter the tests start (workers, the command, servers) would otherwise compile what it imports
# again (where PYTHONDONTWRITEBYTECODE is set, nothing is ever kept), about 1 s of each one's start. The
# tools' own environments (the SAM CLI, Checkov, Locust: 13,000 modules, most never imported) are not:
# the few interpreters that run them keep what they compile as they import it (KEEP_BYTECODE, below).
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
INSTALL := UV_CACHE_DIR=$(VENV)/uv-cache $(UV) pip install --quiet
COMPILED := UV_COMPILE_BYTECODE=1
# What make run needs (the package, the embedded AWS, the Strands Agents SDK so that a factory of Strands
# agents runs too, and the durable execution SDK for the sample durable workflow), and what make test needs
# besides (the dev tools).
RUNNABLE := $(VENV)/.installed-run
INSTALLED := $(VENV)/.installed-dev
# The inbox page's browser tests run in Debian's chromium (Playwright's own download cannot reach the
# internet). (Defined before any rule names it: make reads a rule's prerequisites as it meets them.)
CHROMIUM := /usr/bin/chromium

# Test workers: each runs its own embedded AWS. Two for each core and one more: a good part of the
# suite waits on what it started (make, a server, a browser, a subprocess of the command), and a worker
# waiting leaves its core to another (on 2 cores, the whole suite in 285 to 320 s with 5 or 6 workers,
# 330 to 400 s with 3). The unit tier waits on nothing: one more than the cores.
PYTEST_WORKERS ?= $(shell echo $$(( 2 * $$(nproc) + 1 )))
UNIT_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
# Test runs and the tools keep what they compile, in __pycache__ folders git ignores, even where
# PYTHONDONTWRITEBYTECODE is set: the tools' modules (compiled by the first run that imports each), and
# pytest's rewrite of the asserts of every test module and of its plugins' packages (all of Hypothesis),
# which without its cache each worker does again at each run, about 1 s of its start.
KEEP_BYTECODE := env -u PYTHONDONTWRITEBYTECODE

.PHONY: run new-agent test-app demo invoke layer bench soak load test test-fast checks lint typecheck validate scan pytest clean constraints browser deploy predeploy sam-build permissions calls smoke

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(UV): | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(RUNNABLE): pyproject.toml constraints.txt | $(UV)
	$(COMPILED) $(INSTALL) --python $(BIN)/python -c constraints.txt -e '.[local,strands,durable]'
	touch $(RUNNABLE)

$(INSTALLED): pyproject.toml constraints.txt | $(UV)
	$(COMPILED) $(INSTALL) --python $(BIN)/python -c constraints.txt -e '.[dev]'
	touch $(INSTALLED) $(RUNNABLE)

## run: the embedded AWS and the local HTTP API on 127.0.0.1:3000 (PORT=n for another; AUTH=jwt for sign-in; Ctrl-C stops)
run: $(RUNNABLE)
	AUTH=$(AUTH) $(BIN)/python -m resumable.local.run

## new-agent: start your own agents in app/ (NAME=my_agent): a factory, a tool that asks, one that does not, a test
new-agent: $(RUNNABLE)
	@$(BIN)/python tools/new_agent.py $(if $(NAME),--name $(NAME))

## test-app: app/'s own tests, against its layer built for this machine (make test runs them where app/ exists)
test-app: $(INSTALLED)
	@$(BIN)/python -m layers.build --local .resumable/lambda >/dev/null
	PYTHONPATH=.resumable/lambda/AppLayer/python $(KEEP_BYTECODE) $(BIN)/pytest -p no:cacheprovider app/tests

## demo: the runtime alone: an approval asked in one process, answered in a new, rebuilt one
demo: $(RUNNABLE)
	$(BIN)/python -m resumable.local.demo

## invoke: one handler with one event, like sam local invoke: make invoke FUNCTION=StartTurn EVENT=events/start_turn.json
invoke: $(RUNNABLE)
	$(BIN)/python tools/invoke.py $(FUNCTION) $(EVENT)

## layer: build the Lambda layers (layers/layer.zip; the optional Strands layer, layers/strands-layer.zip) and print their sizes
layer: $(INSTALLED)
	$(BIN)/python -m layers.build

## bench: speed and scale on the embedded AWS (BENCH_AWS=1: real AWS); prints a table, writes bench/results.json
bench: layer
	$(BIN)/python -m bench.bench

## soak: randomized scenarios with faults for SOAK_SECONDS (120), seeded by SOAK_SEED (1); SOAK_SCENARIO=n replays one;
## RESUMABLE_INDEX_LAG=8 (requests) runs them while every index read lags, as DynamoDB's do
soak: $(INSTALLED)
	$(BIN)/python -m tests.soak

## load: many simulated people on the local API (or ARGS="--url URL" for a deployed stack, signed), then the invariants
## (ARGS="--users 50 --seconds 60"; python -m tools.load --help)
LOCUST := $(VENV)/load/bin/locust

$(LOCUST): tools/load-requirements.txt | $(UV)
	$(PYTHON) -m venv --without-pip $(VENV)/load
	$(INSTALL) --python $(VENV)/load/bin/python -r tools/load-requirements.txt
	touch $(LOCUST)

load: $(INSTALLED) $(LOCUST)
	$(BIN)/python -m tools.load $(ARGS)

## test: lint and format check, then the type check, template validation, security scan and the whole test suite side by side
# (chromium first, on its own, where apt-get may ask for a sudo password, which the other steps' output
# would bury; as root, where nothing asks, it installs beside the rest. Then one graph: the installs
# side by side (the dev tools, the SAM CLI, Locust, Checkov, and chromium as root: on a fresh clone
# their downloads and unpacking wait on the network and the disk),
# the lint as soon as the dev tools are in, seconds, so that a slip fails at once (AFTER_LINT: nothing
# else starts before it passes); then the type check and validation, the scan, and the tests as soon as
# their installs are done, beside whatever check is left: the suite's workers leave a core idle while
# they wait on what they started, which the checks take. Output is not held back, so the tests'
# progress shows as it goes: the checks' few lines may fall among its first dots)
test: $(if $(filter 0,$(shell id -u)),,$(CHROMIUM))
	@$(MAKE) --no-print-directory -j 6 --output-sync=none AFTER_LINT=lint typecheck validate scan pytest
	@if [ -d app ]; then $(MAKE) --no-print-directory test-app; fi

typecheck validate scan pytest: | $(AFTER_LINT)

## checks: the static checks alone (make -j runs them side by side)
checks: lint typecheck validate scan

## test-fast: the unit tier alone (no embedded AWS, no servers, no interpreters started): seconds
# (worksteal: a worker left with a long property test hands on what it has not begun: 17 to 20 s
# against 21 to 27 s for xdist's default, on 2 cores of a quiet host)
test-fast: $(INSTALLED)
	$(KEEP_BYTECODE) $(BIN)/pytest -n $(UNIT_WORKERS) --dist worksteal tests/unit

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(INSTALLED)
	$(BIN)/mypy

## validate: cfn-lint on template.yaml (no suppressions) and an offline SAM translation (again only once what it reads changed)
validate: $(INSTALLED)
	@$(BIN)/python tools/checked.py validate -- $(BIN)/python tools/validate_template.py

# Checkov in an environment of its own (its pins conflict with the project's): tools/checkov-requirements.txt.
CHECKOV := $(VENV)/checkov/bin/checkov

$(CHECKOV): tools/checkov-requirements.txt | $(UV)
	$(PYTHON) -m venv --without-pip $(VENV)/checkov
	$(INSTALL) --python $(VENV)/checkov/bin/python -r tools/checkov-requirements.txt
	touch $(CHECKOV)

## scan: Checkov's security scan of template.yaml (pinned, offline): every finding fixed, or skipped with its reason
## (again only once the template or Checkov's pin changed: tools/checked.py)
scan: $(CHECKOV)
	@$(KEEP_BYTECODE) $(BIN)/python tools/checked.py scan -- $(CHECKOV) --file template.yaml --framework cloudformation --compact --quiet --skip-download

## browser: install Debian's chromium for the browser tests (apt-get, as root or with sudo)
browser: $(CHROMIUM)

# One make at a time installs it, any other waiting for it and then finding it there: two apt-gets at
# once (two make tests side by side on a fresh machine) would fail on apt's lock.
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; \
	   echo "chromium for the browser tests: sudo apt-get install chromium (sudo may ask for your password)"; fi; \
	 $$sudo flock /var/lock/resumable-chromium sh -c '[ -x $@ ] || { \
	   echo "installing Debian'"'"'s chromium for the browser tests (apt-get install chromium)"; \
	   apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }'

# The SAM CLI in an environment of its own (its pins conflict with the project's): tools/sam-requirements.txt.
SAM := $(VENV)/sam/bin/sam

$(SAM): tools/sam-requirements.txt | $(UV)
	$(PYTHON) -m venv --without-pip $(VENV)/sam
	$(INSTALL) --python $(VENV)/sam/bin/python -r tools/sam-requirements.txt
	touch $(SAM)

## predeploy: every offline check a deploy must pass (cfn-lint and the SAM translation, Checkov, the permission check, sam build); names the ones that fail
predeploy: $(INSTALLED) $(CHECKOV) $(SAM)
	@$(BIN)/python tools/predeploy.py

sam-build: $(SAM)
	$(KEEP_BYTECODE) $(SAM) build

## permissions: the permission check alone: each function's recorded AWS calls (tests/aws_calls.txt) against its role in template.yaml
permissions: $(INSTALLED)
	$(BIN)/python -m resumable.local.permissions

## calls: run the whole suite and rewrite tests/aws_calls.txt with the AWS calls it recorded
calls: $(INSTALLED) $(CHROMIUM) $(SAM) $(LOCUST) $(CHECKOV)
	RECORD_CALLS=1 $(KEEP_BYTECODE) $(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal

## smoke: after a deploy, a turn end to end against the stack, signed: ARGS="--prompt '...' [--deny MSG | --leave]", "--stack NAME", "--url URL" (a JWT API: RESUMABLE_TOKEN=... make smoke)
smoke: $(INSTALLED)
	@$(BIN)/python tools/smoke.py $(ARGS)

## deploy: make predeploy's checks, then sam deploy (guided the first time) to the AWS account of your credentials; prints the outputs
deploy: $(INSTALLED) $(SAM)
	@$(BIN)/python tools/deploy_check.py
	@$(MAKE) --no-print-directory predeploy
	@if [ -f .aws-sam/deployed ]; then $(SAM) deploy; else $(SAM) deploy --guided && touch .aws-sam/deployed; fi
	$(SAM) list stack-outputs --output table

# (Every tool a test runs: docs/your-agent.md's make predeploy, followed in a copy of the project whose .venv
# is this one, runs Checkov; made there, its scripts would name the copy's path, gone after the test.)
pytest: $(INSTALLED) $(CHROMIUM) $(SAM) $(LOCUST) $(CHECKOV)
	$(KEEP_BYTECODE) $(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

## constraints: re-pin every package of the environment after changing pyproject.toml
constraints: $(INSTALLED)
	(echo "# Every package of the dev environment, pinned (pip freeze). Regenerate with: make constraints"; \
	 $(BIN)/python -m pip freeze --exclude-editable --disable-pip-version-check) > constraints.txt
