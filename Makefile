# devpilot — common tasks. `make run` starts it, `make test` tests it.

GO       ?= go
BIN      := bin/devpilot
# The race detector needs cgo and a C compiler; without one, tests still run.
RACE     ?= $(if $(and $(filter 1,$(shell $(GO) env CGO_ENABLED)),$(shell command -v $$($(GO) env CC) 2>/dev/null)),-race,)
PKGS     := ./...
# hosts/app runs every end-to-end test on both databases: past go test's
# default 10 minutes on a busy 2-core machine under -race.
# It took 21 min on a quiet day in the last full CI run: leave headroom.
TEST_TIMEOUT ?= 45m

.PHONY: all build run eval test test-short test-deploy test-postgres generate check-generate check-tidy lint fmt bench fuzz clean

all: lint test

build:
	$(GO) build -o $(BIN) ./hosts/devpilot

## run: start HTTP API + worker on the embedded defaults (SQLite under ./data).
run: build
	./$(BIN) run

## eval: run the evaluation corpus on the sandbox (or the configured model)
## into ./eval-runs/<timestamp>; EVAL_FLAGS adds flags, e.g.
## EVAL_FLAGS="--cases expense-notes --concurrency 4".
EVAL_FLAGS ?=
eval: build
	./$(BIN) eval run $(EVAL_FLAGS)

## test: every test, on SQLite; also on PostgreSQL when DEVPILOT_TEST_POSTGRES_URL is set;
## then test-deploy.
test:
	$(GO) test $(RACE) -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)
	@$(MAKE) --no-print-directory test-deploy

## test-short: the inner loop: the unit and contract tests, on SQLite only,
## without the race detector. Under -short the tests that start devpilot
## (hosts/app's end-to-end and browser tests, hosts/devpilot's binaries and
## image) skip; make test runs them. Results of unchanged packages come from
## go test's cache.
test-short:
	DEVPILOT_TEST_POSTGRES_URL= $(GO) test -short -timeout 10m $(PKGS)

## test-deploy: compose.yaml and the Helm chart (deploy/helm/devpilot) loaded,
## linted and rendered with compose-go and the Helm SDK, and their output
## checked. deploy/ is a Go module of its own: those libraries stay out of
## devpilot's go.mod, and ./... does not include it.
test-deploy:
	cd deploy && $(GO) test -count=1 ./...

## test-postgres: the tests on both databases against the local PostgreSQL.
test-postgres:
	DEVPILOT_TEST_POSTGRES_URL=$${DEVPILOT_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable} \
		$(GO) test $(RACE) -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)

## generate: regenerate the mocks of every port.
generate:
	$(GO) generate ./...

## check-generate: fail when regenerating the mocks changes anything.
check-generate: generate
	@git diff --exit-code --stat -- testkit/mocks || { echo "mocks are stale: run 'make generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- testkit/mocks)" || { git status --short -- testkit/mocks; echo "mocks are stale: run 'make generate' and commit"; exit 1; }

## check-tidy: fail when go mod tidy would change go.mod or go.sum (deploy/'s too).
check-tidy:
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run 'go mod tidy' and commit"; exit 1; }
	@cd deploy && $(GO) mod tidy -diff || { echo "deploy/go.mod or deploy/go.sum is not tidy: run 'cd deploy && go mod tidy' and commit"; exit 1; }

## lint: go vet and staticcheck (also of the binary built with -tags nosandbox,
## and of deploy/'s module) and a gofmt check. staticcheck is pinned as a tool
## in go.mod; deploy/ has a go.mod of its own, so it runs the binary `go tool -n`
## names rather than adding the tool to deploy/'s module as well.
lint:
	$(GO) vet $(PKGS)
	$(GO) vet -tags nosandbox ./hosts/devpilot
	cd deploy && $(GO) vet ./...
	$(GO) tool staticcheck $(PKGS)
	$(GO) tool staticcheck -tags nosandbox ./hosts/devpilot
	sc=$$($(GO) tool -n staticcheck) && cd deploy && "$$sc" ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		test -z "$$out" || { echo "gofmt would change:"; echo "$$out"; exit 1; }

fmt:
	gofmt -w $$(git ls-files '*.go')

## bench: Go benchmarks, including start-up time, idle RSS and /api/v1/me
## throughput. The throughput benchmarks (webhook processing, chat relay) also
## run the binary of BENCH_BASE (default: the previous commit) side by side in
## the same run and report both figures; BENCH_BASE= (empty) skips it.
BENCH_BASE ?= HEAD~1
BASE_BIN   := bin/devpilot-base
bench:
	@if [ -n "$(BENCH_BASE)" ]; then bash scripts/build-base.sh "$(BENCH_BASE)" $(BASE_BIN); fi
	DEVPILOT_BENCH_BASE_BIN=$(if $(BENCH_BASE),$(abspath $(BASE_BIN)),) \
		$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s -timeout 60m $(PKGS)

## fuzz: a short run (FUZZTIME each) of every fuzz target: request JSON,
## multipart uploads, Last-Event-ID, text cleaning, webhook payloads.
FUZZTIME     ?= 15s
FUZZ_TARGETS := ./hosts/httpapi:FuzzDecodeJSON ./hosts/httpapi:FuzzReadSpecForm ./hosts/httpapi:FuzzLastEventID \
	./ports:FuzzCleanText ./adapters/github:FuzzParseWebhook
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t##*:} ($${t%%:*})"; \
		$(GO) test -run '^$$' -fuzz "^$${t##*:}$$" -fuzztime $(FUZZTIME) $${t%%:*}; \
	done

clean:
	rm -rf bin
