# Superstep — run `make help` for the targets.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
ADDR      ?= 127.0.0.1:8080
BENCH     ?= .
BENCHTIME ?= 1s
COUNT     ?= 1
PKG       ?= ./...

# The local Postgres: DEV_POSTGRES starts it and prints its URL (tests put a
# stand-in here). Recipes run DEV_DB in a plain assignment (db=$$(...);), so
# under set -e a cluster that fails to start stops the recipe with the
# reason; it never reaches the Studio or the tests with an empty URL.
DEV_POSTGRES ?= scripts/dev-postgres
DEV_BROWSER  ?= scripts/dev-browser
DEV_DB = DEV_POSTGRES="$(DEV_POSTGRES)" scripts/dev-database-url $@

.PHONY: help
help: ## List the targets with what they do
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_\/-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: generate ## Start the local Postgres, migrate it, and serve the Studio on $(ADDR)
	db=$$($(DEV_DB)); DATABASE_URL="$$db" $(GO) run ./cmd/studio -addr $(ADDR)

.PHONY: browser
browser: ## Install Debian chromium for the end-to-end tests when it is missing
	$(DEV_BROWSER)

# The JS SDK the Agent Server API's scenarios run with (server/sdktest):
# installed from the lock file, and again only when it changes, so a test
# that runs make itself never reinstalls it under a running scenario.
SDK_JS := server/sdktest/js
NPM    ?= npm

.PHONY: sdk/deps
sdk/deps: $(SDK_JS)/node_modules/.package-lock.json ## Install the JS SDK the API's SDK scenarios run with (npm ci)
$(SDK_JS)/node_modules/.package-lock.json: $(SDK_JS)/package.json $(SDK_JS)/package-lock.json
	@command -v $(NPM) >/dev/null || { echo "make sdk/deps: npm is missing: install Node.js 20 or later (it runs server/sdktest's scenarios)" >&2; exit 1; }
	$(NPM) ci --prefix $(SDK_JS) --no-audit --no-fund
	touch $@

.PHONY: test
test: browser sdk/deps ## Start the local Postgres, then run every test with the race detector
	db=$$($(DEV_DB)); TEST_DATABASE_URL="$$db" $(GO) test -race -count=$(COUNT) $(PKG)

.PHONY: test/short
test/short: sdk/deps ## Run the tests that need no database (database tests skip outside CI)
	$(GO) test -count=1 $(PKG)

# make bench keeps the benchmarks' raw output in BENCH_OUT (git-ignored)
# and prints issue #20's targets from it; a failing benchmark still gets
# its table, and make still fails.
BENCH_OUT ?= bench.out

.PHONY: bench bench/table bench/readme
bench: ## Run benchmarks (BENCH=regexp PKG=./engine COUNT=6) against a durable local Postgres (fsync and synchronous commit on; its own cluster), then print issue #20's targets
	db=$$(PG_DURABLE=1 $(DEV_DB)); status=0; \
	  TEST_DATABASE_URL="$$db" $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) -count $(COUNT) $(PKG) | tee $(BENCH_OUT) || status=$$?; \
	  echo; $(GO) run ./internal/benchtable < $(BENCH_OUT); exit $$status
bench/table: ## Print issue #20's targets (figure, floor, ratio, met) from the last make bench's output (BENCH_OUT)
	$(GO) run ./internal/benchtable < $(BENCH_OUT)
bench/readme: ## Print issue #20's targets from BENCH_OUT and write them into README.md's Performance section
	$(GO) run ./internal/benchtable -readme README.md < $(BENCH_OUT)

.PHONY: golden/record
golden/record: ## Re-record the engine's and models' golden files from LangGraph.js (needs npm; CASES="a b" for some engine cases)
	cd engine/testdata/golden/js && npm ci --no-audit --no-fund && node record.mjs $(CASES)
	cd models/testdata/golden/js && npm ci --no-audit --no-fund && node record.mjs

.PHONY: generate
generate: ## Regenerate templ components (*_templ.go)
	$(GO) tool templ generate -log-level warn

.PHONY: lint
lint: ## gofmt, go vet, staticcheck, go.mod tidiness, generated files up to date
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.pg/*')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) mod tidy -diff
	$(GO) tool templ generate -log-level warn
	@git diff --exit-code -- '*_templ.go' || { echo "generated templ files are stale: run 'make generate' and commit"; exit 1; }

.PHONY: pg/start pg/stop pg/reset
pg/start: ## Start the local Postgres (installs PostgreSQL 15 + pgvector when missing)
	scripts/dev-postgres start
pg/stop: ## Stop the local Postgres
	scripts/dev-postgres stop
pg/reset: ## Delete the local Postgres cluster and start a fresh one
	scripts/dev-postgres reset

.PHONY: build
build: ## Build the studio binary into bin/
	$(GO) build -o bin/studio ./cmd/studio
