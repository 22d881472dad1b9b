# loanhost: the two commands a newcomer needs are `make run` and `make test`.
# Cargo output goes to the user's cache folder, outside the clone, so repeated runs are fast;
# everything still works when that folder is empty.

SHELL := /bin/bash
CACHE ?= $(HOME)/.cache/loanhost
export CARGO_TARGET_DIR ?= $(CACHE)/target
export PLUGIN_TARGET_DIR ?= $(CACHE)/plugins-target
LOANHOST := $(CARGO_TARGET_DIR)/release/loanhost

.PHONY: all deps plugins build run image test sdks lint unit e2e bench bench-matrix attack fuzz mutations watch clean-dist

all: build

## deps: install what the build and the tests need (idempotent)
deps:
	@scripts/setup.sh

## plugins: build every plugin to a component into plugins/build/ (the Rust tools, and the
## Python and TypeScript examples and hostile plugins into build/examples/ and build/hostile/,
## with the toolchains of plugins/toolchain), and install the shipped ones
## (plugins/tools/SHIPPED) into plugins/dist/, the plugin directory `make run` serves
plugins: deps
	@LOANHOST_BUILD_EXAMPLES=1 scripts/build-plugins.sh plugins/dist plugins/build >/dev/null

## build: the release host binary and the plugins
build: plugins
	cargo build --release -p loanhost

## run: build everything and start the server (Ctrl-C stops it)
run: build
	@scripts/run.sh "$(LOANHOST)"

## image: the server image (deploy/image/Containerfile), built without a daemon from the
## release binary and the shipped plugins: localhost/loanhost:<version> (docs/deploy.md)
image: build
	@scripts/image.sh "$(LOANHOST)" plugins/dist

## test: formatting, lints, unit and end-to-end tests (with a short attack suite and brief
## fuzzing); stops at once with the script's own message when PostgreSQL cannot start
test: deps lint
	cd plugins && cargo test -p loanhost-guest -p report_loan_milestones -p get_loan_reporting_metadata --locked
	@$(MAKE) --no-print-directory sdks
	url=$$(scripts/postgres.sh) && TEST_POSTGRES_URL="$$url" cargo test --workspace --locked

## sdks: the Python and TypeScript SDKs' own tests, the views library and the report views
## type-checked, and each example plugin's unit tests under its language's runner (pytest,
## node --test), with the pinned toolchains of plugins/toolchain
sdks:
	eval "$$(scripts/plugin-toolchain.sh)" && \
		PYTHONDONTWRITEBYTECODE=1 "$$PLUGIN_PY" -m pytest -q -p no:cacheprovider plugins/sdk-python/tests && \
		"$$PLUGIN_NODE_BIN/tsc" -p plugins/sdk-ts/tsconfig.json && \
		"$$PLUGIN_NODE_BIN/tsc" -p plugins/views/tsconfig.json && \
		(cd plugins/views && node --import ../sdk-ts/register.mjs --test test/*.test.ts) && \
		(cd plugins/sdk-ts && node --import ./register.mjs --test test/*.test.ts)
	for dir in plugins/examples/*/*/; do scripts/test-plugin.sh "$$dir" || exit 1; done

lint:
	cargo fmt --all -- --check
	cd plugins && cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	cd plugins && cargo clippy --workspace --all-targets --locked -- -D warnings

## bench: one plugin call; a grouped aggregate over 1M seeded loans (BENCH_LOANS to change
## the size) on SQLite and PostgreSQL; reports end to end over HTTP beside their raw SQL, and
## an Agent beside 8 Admin reports; the hot path against a bare handler; two hosts against one;
## a page of loans and a loan application read beside their SQL;
## report_loans built in Rust, Python and TypeScript side by side; then the report matrix
bench: plugins
	cargo bench -p loanhost --bench plugin_call --locked
	BENCH_POSTGRES_URL=$$(scripts/postgres.sh --bench) cargo bench -p loanhost --bench data_query --locked
	BENCH_POSTGRES_URL=$$(scripts/postgres.sh --bench) cargo bench -p loanhost --bench http_reports --locked
	cargo build --release -p loanhost-bare --locked
	cargo bench -p loanhost --bench hot_path --locked
	BENCH_POSTGRES_URL=$$(scripts/postgres.sh --bench) cargo bench -p loanhost --bench scale_out --locked
	cargo bench -p loanhost --bench audit_overhead --locked
	BENCH_POSTGRES_URL=$$(scripts/postgres.sh --bench) cargo bench -p loanhost --bench listing --locked
	BENCH_POSTGRES_URL=$$(scripts/postgres.sh --bench) cargo bench -p loanhost --bench applications --locked
	cargo bench -p loanhost --bench languages --locked
	$(MAKE) bench-matrix

## bench-matrix: every argument shape of the five report tools at 1M loans (BENCH_LOANS), as
## Admin, Agent, Processor and ConciergeKey, on SQLite and PostgreSQL, each beside its raw
## SQL (checked equal first); MATRIX_CALLERS, MATRIX_ONLY and MATRIX_ENGINES narrow it,
## MATRIX_REPS sets the cap of 200 runs a line
bench-matrix: plugins
	BENCH_POSTGRES_URL=$$(scripts/postgres.sh --bench) cargo bench -p loanhost --bench report_matrix --locked

## attack: the attack suite at length (10 s per attack, release build); checks the legitimate
## p99 ratio too and writes the table into docs/security.md
attack: plugins
	ATTACK_SECONDS=$${ATTACK_SECONDS:-10} ATTACK_STRICT=1 ATTACK_REPORT=$(CURDIR)/docs/security.md \
		cargo test --release -p loanhost --test attack --locked -- --nocapture

## watch: rebuild plugins/tools/$(TOOL) on every save and deploy it into $(DEPLOY)
## (default: plugins/dist, which `make run` serves), signed with $(SIGN_KEY) when set,
## e.g. `make watch TOOL=my_report`
watch: build
	$(LOANHOST) plugin watch plugins/tools/$(TOOL) --deploy $${DEPLOY:-plugins/dist} \
		$${SIGN_KEY:+--sign-key "$$SIGN_KEY"}

## mutations: applies each deliberate one-line bug of tests/mutations.json, runs the tests that
## must catch it, restores the file; fails if any bug goes unnoticed (needs a clean tree)
mutations: deps
	url=$$(scripts/postgres.sh) && TEST_POSTGRES_URL="$$url" scripts/mutate.py

## fuzz: the property-based fuzzers (JSON-RPC framing, manifests, filter/query compilation,
## import lines) at length: FUZZ_CASES cases each (default 100000)
fuzz:
	PROPTEST_CASES=$${FUZZ_CASES:-100000} cargo test --release -p loanhost --lib --locked fuzz_ -- --nocapture

clean-dist:
	rm -rf plugins/dist plugins/build
