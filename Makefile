# Engram. `make run` starts the server on the embedded default; `make test`
# runs every test (the command CI runs).
GO        ?= go
BIN       ?= bin/engram
BENCH     ?= .
BENCHTIME ?= 1s

.PHONY: build run test test-bin test-race test-rest test-norace test-race-smoke test-deps test-deps-mcp-ts test-deps-openai-node test-deps-pytools test-deps-typescript test-deps-python test-typescript test-python lint fuzz fuzz-api sdk-version vulncheck bench bench-quality bench-load bench-replay clean

# `engram version` reports these; `go build` alone leaves them to Go's
# build information. VERSION (the file) is the release, shared by the server
# and the SDKs (`make sdk-version` stamps it into both; their suites check
# it); the commit says which build.
VERSION ?= $(shell cat VERSION 2>/dev/null || echo devel)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
CLI      = github.com/engram-memory/engram/internal/cli

# The binary is built without cgo: a static binary, as the Dockerfile's.
# Only the standard library's host and user lookups (net, os/user) use cgo
# when it is on, and their pure-Go versions serve us; without the dynamic
# loader and the C library every engram process faults fewer pages and
# uses less CPU at its start (2-6 ms, docs/benchmarks.md#the-process-floor),
# which a command-line search pays at every call. The race detector needs
# cgo: the race builds below keep it.
STATIC = CGO_ENABLED=0

build:
	$(STATIC) $(GO) build -ldflags "-X $(CLI).version=$(VERSION) -X $(CLI).commit=$(COMMIT)" -o $(BIN) ./cmd/engram

run:
	$(STATIC) $(GO) run ./cmd/engram serve

# The end-to-end suites drive a built engram binary, built once per `make
# test` and named to them in ENGRAM_TEST_BINARY (internal/testserver; plain
# `go test` builds it into a cache instead). They drive a plain build: a
# race-built server is several times slower, and the in-process tests run
# the same code under the race detector (`go test -race`). RACE_SMOKE then
# runs the end-to-end tests that stress the server's concurrency (writes
# under load and a kill, a live rebuild, the scheduler, the chat-model
# pipeline, a graceful stop, the CLI's local stack) once more against a
# race-built binary; a race the server reports fails the test.
# internal/cli's TestRaceSmokeNamesTests keeps the names in step with the tests.
TEST_BIN   ?= $(CURDIR)/bin/engram-test
RACE_BIN   ?= $(CURDIR)/bin/engram-race
RACE_SMOKE ?= TestKillMidLoadLosesNoAcknowledgedWrite|TestLiveRebuildOfOneProjection|TestSchedulerEndToEnd|TestProcessingWithChatModelEndToEnd|TestServeHealthAndGracefulStop|TestCLISearchLocal

# -race turns on checkptr, which checks every unsafe.Pointer conversion. In
# modernc.org/... (SQLite translated from C, and the C library and
# allocator it runs on: pointer arithmetic in every statement it parses or
# steps and every allocation it makes) those checks cost the SQLite-bound
# test packages a large share of their CPU (docs/testing.md) and check
# code that is not ours; our packages keep them, and the race detector
# stays on everywhere.
RACE ?= -race -gcflags=modernc.org/...=-d=checkptr=0

# The vector index's quality tests (infra/vectorindex/quality_test.go, built
# without -race only) prove the graph's quality, not its safety under
# concurrency, and the race detector makes them ten times dearer; they run
# in a pass of their own without it. A test added to that file goes here.
NORACE_TESTS ?= TestHNSWRecall|TestFilteredSearchReturnsK|TestDuplicateGroupsStayNavigable|TestMemoryWithinBudget

# make test runs in two lanes at once: the race pass alone
# leaves a core idle whenever its packages wait (on a server or CLI run
# they started, on the last long package), and the smaller passes need
# nothing of it:
# - test-race: every package under the race detector, the slowest first
#   (SLOW_FIRST) so that no long package starts last and runs alone; then
#   the TypeScript and Python SDK suites, at once (each waits on the
#   servers it starts, and by then test-rest is done);
# - test-rest: lint, the vector index's pass without the detector, the race
#   smoke pass.
# Both lanes start once the plain binary is built; test-race also waits for
# the installs (test-deps: the outside clients' and the SDK suites'), which
# run beside the build and lint (go.mod's ignore keeps go vet ./... out of
# what they write). make -j4 is for that start: the build and the five
# installs at once; later only the two lanes run. Nothing
# in test-rest writes into the tree the race pass's tests walk (docs,
# internal/archtest); the installs end before the race pass starts, and the
# SDK suites, whose builds and caches write into the tree, run after it in
# its own lane.
# --output-sync prints each step's output whole when it ends.
# docs/testing.md#two-lanes has the timings.
SLOW_FIRST ?= ./internal/cli ./api ./projections/search ./internal/app ./infra/sqlite ./infra/vectorindex ./internal/multinode ./infra/postgres ./projections

test:
	$(MAKE) -j4 --output-sync=target test-race test-rest

test-bin:
	$(STATIC) $(GO) build -o $(TEST_BIN) ./cmd/engram

# internal/cli's end-to-end tests and api's tests run in parallel
# (t.Parallel): the former spend most of their time waiting for the
# processes they started (a server, CLI runs, schemathesis, the SDKs'
# clients), the latter each own a whole stack and wait on its timeouts,
# projections and job runner, so four at once on two cores keep them busy;
# go test's default is GOMAXPROCS (2).
PARALLEL ?= 4

test-race: test-deps test-bin
	PATH="$(PYTOOLS)/bin:$$PATH" ENGRAM_TEST_BINARY=$(TEST_BIN) $(GO) test $(RACE) -count=1 -parallel $(PARALLEL) -timeout 20m $(SLOW_FIRST) ./...
	$(MAKE) test-typescript test-python ENGRAM_TEST_BINARY=$(TEST_BIN)

test-rest: test-bin
	$(MAKE) lint
	$(MAKE) test-norace
	$(MAKE) test-race-smoke

test-norace:
	$(GO) test -count=1 -timeout 10m -run '^($(NORACE_TESTS))$$' ./infra/vectorindex

test-race-smoke:
	$(GO) build $(RACE) -o $(RACE_BIN) ./cmd/engram
	ENGRAM_TEST_BINARY=$(RACE_BIN) $(GO) test $(RACE) -count=1 -timeout 10m -run '^($(RACE_SMOKE))$$' ./internal/cli

# The clients nobody here wrote, at pinned versions, that the Go suites
# drive the binary with: the official MCP TypeScript SDK (test/mcp-ts,
# internal/cli's TestMCPTypeScriptSDKDrivesTheBinary), the official OpenAI
# Python and Node SDKs (test/openai-clients, TestOfficialOpenAISDKs) and
# schemathesis (test/fuzz, TestSchemathesis). The Python ones go into a
# virtual environment that `make test` puts first on PATH (a system Python
# may refuse pip installs). A missing Node.js or Python fails, never skips.
PYTOOLS ?= $(CURDIR)/bin/pytools

# The installs write to directories of their own (the npm ones share npm's
# cache, which takes concurrent writers), so make test runs them at once,
# beside the build; the SDK suites' own (test-deps-typescript,
# test-deps-python) are among them, so that the race pass, after which the
# SDK suites run, does not wait for them there.
test-deps: test-deps-mcp-ts test-deps-openai-node test-deps-pytools test-deps-typescript test-deps-python

test-deps-mcp-ts:
	cd test/mcp-ts && npm ci --no-audit --no-fund

test-deps-openai-node:
	npm ci --no-audit --no-fund --prefix test/openai-clients/node

test-deps-pytools:
	python3 -m venv $(PYTOOLS)
	$(PYTOOLS)/bin/pip install --quiet --disable-pip-version-check -r test/openai-clients/python/requirements.txt -r test/fuzz/requirements.txt

# The TypeScript SDK (sdk/typescript): its pinned dependencies, the tsc
# build and its suite (node --test) against the real binary, which is
# ENGRAM_TEST_BINARY when set and otherwise built by the suite. The
# dependencies are installed (npm ci) when node_modules is older than the
# lock file or missing, so that make test installs them in test-deps and
# its later make test-typescript finds them there.
TS_DEPS = sdk/typescript/node_modules/.package-lock.json

test-deps-typescript: $(TS_DEPS)

$(TS_DEPS): sdk/typescript/package-lock.json
	cd sdk/typescript && npm ci --no-audit --no-fund
	touch $@

test-typescript: $(TS_DEPS)
	cd sdk/typescript && npm run build && npm test

# The Python SDK's suite against the real server ($ENGRAM_TEST_BINARY, else
# a `go build` of its own), in a virtualenv under bin/ with the pinned dev
# dependencies, after mypy --strict over the package (it ships py.typed).
# A missing Python or package fails; so does a run that collects no tests
# (pytest's exit code 5).
# The virtualenv and the dev dependencies are made (test-deps-python) when
# older than requirements-dev.txt or missing, as the TypeScript ones are;
# the package itself is installed from the tree at every run.
PYTHON  ?= python3
PY_VENV ?= $(CURDIR)/bin/pyenv
PY_DEPS  = $(PY_VENV)/.requirements-dev

test-deps-python: $(PY_DEPS)

$(PY_DEPS): sdk/python/requirements-dev.txt
	$(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install -q --disable-pip-version-check -r sdk/python/requirements-dev.txt
	touch $@

test-python: $(PY_DEPS)
	$(PY_VENV)/bin/pip install -q --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall ./sdk/python
	$(PY_VENV)/bin/mypy --strict sdk/python/src/engram
	cd sdk/python && $(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider; rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "test-python: no tests collected" >&2; exit 1; fi; exit $$rc

# sdk-version stamps the release in VERSION into both SDKs (sdk/python's
# _version.py, sdk/typescript's package.json, package-lock.json and
# src/version.ts); each SDK's suite fails while they differ from VERSION.
# The release process is in docs/development.md.
sdk-version:
	@case "$(VERSION)" in *[!0-9A-Za-z.+-]*|"") echo "sdk-version: bad VERSION '$(VERSION)'" >&2; exit 1;; esac
	sed -i 's/^__version__ = ".*"/__version__ = "$(VERSION)"/' sdk/python/src/engram/_version.py
	sed -i 's/^export const VERSION = ".*";/export const VERSION = "$(VERSION)";/' sdk/typescript/src/version.ts
	cd sdk/typescript && npm version --no-git-tag-version --allow-same-version "$(VERSION)" >/dev/null

lint:
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# Every fuzz target for FUZZTIME each (package:target). Not part of `make
# test`: the committed seed corpora (testdata/fuzz) run there as ordinary
# tests.
FUZZTIME ?= 20s
FUZZ_TARGETS = ./api:FuzzRequestDecoders ./domain/memory:FuzzNormalizeContent \
	./infra/textindex:FuzzTokenize ./infra/embed/local:FuzzTokenizerJSON ./infra/embed/local:FuzzSafetensors

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) $${t%%:*}; \
	done

# Known vulnerabilities in the dependencies and the standard library. It
# needs the Go vulnerability database (https://vuln.go.dev), so it is not
# part of `make lint`, which must run offline.
GOVULNCHECK ?= golang.org/x/vuln/cmd/govulncheck@v1.9.0

# fuzz-api fuzzes the API of the real binary from its OpenAPI document
# with schemathesis (installed by test-deps), with a fixed budget (50
# examples per operation and pass, in the examples, coverage and fuzzing
# phases, and 50 examples of the stateful phase, scenarios of up to 12
# steps that follow the document's links) and seed, over data seeded through the API: as its
# owner and, at the same time, as another user who must get none of it
# (TestSchemathesis, test/fuzz/engram_hooks.py); make test runs a short
# pass of the same.
fuzz-api: test-deps
	PATH="$(PYTOOLS)/bin:$$PATH" ENGRAM_TEST_FUZZ_API_EXAMPLES=$${ENGRAM_TEST_FUZZ_API_EXAMPLES:-50} ENGRAM_TEST_FUZZ_API_PHASES=examples,coverage,fuzzing,stateful \
		go test -count=1 -timeout 60m -run '^TestSchemathesis$$' -v ./internal/cli

vulncheck:
	$(GO) run $(GOVULNCHECK) ./...

bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem ./...

# Retrieval quality on the public LoCoMo dev split, every mode, next to the
# BM25 baseline, under both protocols; exits 3 when a target is missed.
bench-quality:
	$(GO) run ./cmd/engram-bench quality --corpus ../shared/bench/locomo-dev/corpus.jsonl --queries ../shared/bench/locomo-dev/queries.jsonl --bench-dir ../shared/bench --protocol turns --modes hybrid,vector,keyword --out bench-out/quality
	$(GO) run ./cmd/engram-bench quality --corpus ../shared/bench/locomo-dev/corpus.jsonl --queries ../shared/bench/locomo-dev/queries.jsonl --bench-dir ../shared/bench --protocol turns+notes --modes hybrid,vector,keyword --out bench-out/quality-notes

# Search latency over HTTP on loopback at 10k and 100k memories, concurrency 8.
bench-load:
	$(GO) run ./cmd/engram-bench load --n 10000 --concurrency 8 --duration 20s --out bench-out/load-10k.json
	$(GO) run ./cmd/engram-bench load --n 100000 --concurrency 8 --duration 20s --out bench-out/load-100k.json

# Rebuild speed: fill a data dir with REPLAY_N memories through the API,
# stop, replay the log into every projection and into each alone.
REPLAY_N ?= 10000
bench-replay:
	$(GO) run ./cmd/engram-bench replay --n $(REPLAY_N) --floor --out bench-out/replay.json

clean:
	rm -rf bin bench-out
