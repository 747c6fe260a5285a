# Engram. `make run` starts the server on the embedded default; `make test`
# runs every test (the command CI runs).
GO        ?= go
BIN       ?= bin/engram
BENCH     ?= .
BENCHTIME ?= 1s

.PHONY: build run test trim-go-cache test-bin test-race test-clients test-rest test-sdks test-norace test-race-smoke test-deps test-deps-clients test-deps-mcp-ts test-deps-openai-node test-deps-pytools test-deps-typescript test-deps-python test-typescript test-python lint fuzz fuzz-api sdk-version vulncheck bench bench-quality bench-load bench-replay clean

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
# internal/cli's TestMakefileListsNameTests keeps the names in step with the tests.
TEST_BIN   ?= $(CURDIR)/bin/engram-test
RACE_BIN   ?= $(CURDIR)/bin/engram-race
# The tests of internal/cli that drive the binary with the clients
# test-deps-clients installs: the official MCP TypeScript SDK, OpenAI's
# Python and Node SDKs, schemathesis. make test runs them in test-clients,
# not in the race pass. internal/cli's TestMakefileListsNameTests keeps the
# names in step with the tests, and TestClientTestsNameEveryTestOfTheClients
# fails a test of a file that runs one of the clients but is not named here.
CLIENT_TESTS ?= TestMCPTypeScriptSDKDrivesTheBinary|TestOfficialOpenAISDKs|TestSchemathesis

RACE_SMOKE ?= TestKillMidLoadLosesNoAcknowledgedWrite|TestLiveRebuildOfOneProjection|TestSchedulerEndToEnd|TestProcessingWithChatModelEndToEnd|TestServeHealthAndGracefulStop|TestCLISearchLocal

# -race turns on checkptr, which checks every unsafe.Pointer conversion. In
# modernc.org/... (SQLite translated from C, and the C library and
# allocator it runs on: pointer arithmetic in every statement it parses or
# steps and every allocation it makes) those checks cost the SQLite-bound
# test packages a large share of their CPU (docs/testing.md) and check
# code that is not ours; our packages keep them, and the race detector
# stays on everywhere.
RACE ?= -race -gcflags=modernc.org/...=-d=checkptr=0

# go test vets each package it tests (a subset of go vet's analyzers)
# unless told not to. make test's lint runs every analyzer of go vet over
# every package, test files included, so its go test passes do not vet
# again: that was ~68 CPU-s of the race pass on two cores
# (docs/testing.md#the-lanes). go vet ./... reads the files of a plain
# build, so lint vets the packages with files built for -race alone once
# more with the race tag (RACE_TAGGED).
TEST_VET ?= -vet=off
RACE_TAGGED = $(addprefix ./,$(sort $(dir $(shell git grep -l -E '^//go:build .*race' -- '*.go'))))

# The vector index's quality tests (infra/vectorindex/quality_test.go, built
# without -race only) prove the graph's quality, not its safety under
# concurrency, and the race detector makes them ten times dearer; they run
# in a pass of their own without it. A test added to that file goes here.
NORACE_TESTS ?= TestHNSWRecall|TestFilteredSearchReturnsK|TestDuplicateGroupsStayNavigable|TestMemoryWithinBudget

# make test runs in four lanes at once: the race pass alone leaves a core
# idle whenever its packages wait (on a server or CLI run they started, on
# the last long package), and the other lanes need nothing of it:
# - test-race: every package under the race detector, the slowest first
#   (SLOW_FIRST) so that no long package starts last and runs alone, but
#   for CLIENT_TESTS;
# - test-clients: the outside clients' installs (test-deps-clients), then
#   CLIENT_TESTS under the race detector;
# - test-rest: lint, the vector index's pass without the detector, the race
#   smoke pass;
# - test-sdks: the SDK suites' installs, then the TypeScript and Python SDK
#   suites at once (each waits on the servers it starts).
# Each lane starts once the plain binary is built, which starts first; the
# installs run beside the build and the race pass. The SDK suites' builds
# and caches (tsc's dist, mypy, __pycache__, the SDK reinstalled into
# bin/pyenv) write into the tree while the race pass's tests walk it
# (docs, internal/archtest, api): internal/sourcetree's walk leaves out
# what is no source and passes over what vanishes; go.mod's ignore keeps
# go vet ./... out of node_modules and bin/, and lint's gofmt reads the
# repository's files only.
# --output-sync prints each step's output whole when it ends; each step
# prints when it started and ended (STAMP), for the timeline in
# docs/testing.md#the-lanes.
SLOW_FIRST ?= ./internal/cli ./api ./projections/search ./internal/app ./infra/sqlite ./infra/vectorindex ./internal/multinode ./infra/postgres ./projections

# STAMP prints "== <step> start|end HH:MM:SS" (UTC): $(call STAMP,start).
STAMP = @echo "== $@ $(1) $$(date -u +%T)"

test:
	$(call STAMP,start)
	$(MAKE) -j4 --output-sync=target trim-go-cache test-race test-clients test-rest test-sdks
	$(call STAMP,end)

# Go's build cache has no bound of its own (go deletes only entries unused
# for five days), and a clone or worktree at a new path compiles every
# package of ours into it anew (the compile's key holds the directory):
# on the shared machine it grew by ~3 GB an hour and once filled the disk.
# make test first keeps the GOCACHE_MAX_MB megabytes used most recently
# (go refreshes an entry's time when it uses it, at most hourly) and
# deletes the rest, as go's own trim does; 0 turns it off.
# docs/testing.md#the-go-build-cache.
GOCACHE_MAX_MB ?= 20000

trim-go-cache:
	@cache="$$($(GO) env GOCACHE)"; \
	if [ "$(GOCACHE_MAX_MB)" -gt 0 ] && [ -d "$$cache" ]; then \
		find "$$cache" -type f -name '*-[ad]' -printf '%T@\t%s\t%p\n' | sort -rn | \
			awk -F '\t' -v max=$$(( $(GOCACHE_MAX_MB) * 1000000 )) '{ kept += $$2 } kept > max { print $$3 }' | \
			xargs -r -d '\n' rm -f; \
	fi

test-bin:
	$(call STAMP,start)
	$(STATIC) $(GO) build -o $(TEST_BIN) ./cmd/engram
	$(call STAMP,end)

# internal/cli's end-to-end tests and api's tests run in parallel
# (t.Parallel): the former spend most of their time waiting for the
# processes they started (a server, CLI runs, schemathesis, the SDKs'
# clients), the latter each own a whole stack and wait on its timeouts,
# projections and job runner, so four at once on two cores keep them busy;
# go test's default is GOMAXPROCS (2).
PARALLEL ?= 4

test-race: test-bin
	$(call STAMP,start)
	ENGRAM_TEST_BINARY=$(TEST_BIN) $(GO) test $(RACE) $(TEST_VET) -count=1 -parallel $(PARALLEL) -timeout 20m -skip '^($(CLIENT_TESTS))$$' $(SLOW_FIRST) ./...
	$(call STAMP,end)

# The tests that drive the binary with the outside clients (CLIENT_TESTS,
# test-deps-clients) run in a go test of their own once those are
# installed, so that the race pass need not wait for the installs (the
# Python tools' ended ~90 s after the build). They run under the race
# detector as in the race pass, whose skip list is the same variable; a
# missing client fails them, never skips them.
test-clients: test-bin test-deps-clients
	$(call STAMP,start)
	PATH="$(PYTOOLS)/bin:$$PATH" ENGRAM_TEST_BINARY=$(TEST_BIN) $(GO) test $(RACE) $(TEST_VET) -count=1 -parallel $(PARALLEL) -timeout 20m -run '^($(CLIENT_TESTS))$$' ./internal/cli
	$(call STAMP,end)

test-rest: test-bin
	$(MAKE) lint
	$(MAKE) test-norace
	$(MAKE) test-race-smoke

# The SDK suites' installs are prerequisites here, not of the race pass,
# which does not need them: make -j4 runs them once a slot frees.
test-sdks: test-bin test-deps-typescript test-deps-python
	$(MAKE) test-typescript test-python ENGRAM_TEST_BINARY=$(TEST_BIN)

test-norace:
	$(call STAMP,start)
	$(GO) test $(TEST_VET) -count=1 -timeout 10m -run '^($(NORACE_TESTS))$$' ./infra/vectorindex
	$(call STAMP,end)

test-race-smoke:
	$(call STAMP,start)
	$(GO) build $(RACE) -o $(RACE_BIN) ./cmd/engram
	ENGRAM_TEST_BINARY=$(RACE_BIN) $(GO) test $(RACE) $(TEST_VET) -count=1 -timeout 10m -run '^($(RACE_SMOKE))$$' ./internal/cli
	$(call STAMP,end)

# The clients nobody here wrote, at pinned versions, that the Go suites
# drive the binary with: the official MCP TypeScript SDK (test/mcp-ts,
# internal/cli's TestMCPTypeScriptSDKDrivesTheBinary), the official OpenAI
# Python and Node SDKs (test/openai-clients, TestOfficialOpenAISDKs) and
# schemathesis (test/fuzz, TestSchemathesis). The Python ones go into a
# virtual environment that `make test` puts first on PATH (a system Python
# may refuse pip installs). A missing Node.js or Python fails, never skips.
# pip installs without compiling every module to byte code (PIP_INSTALL):
# Python compiles a module at its first import, and the tests import a
# fifth of what the installs hold (schemathesis, hypothesis, the OpenAI
# SDK: 38 CPU-s with the byte code, 22 without, and ~3 more at the first
# import; docs/testing.md#the-lanes).
PYTOOLS ?= $(CURDIR)/bin/pytools
PIP_INSTALL = pip install --quiet --disable-pip-version-check --no-compile

# The installs write to directories of their own (the npm ones share npm's
# cache, which takes concurrent writers), so make test runs them at once,
# beside the build: the outside clients' (test-deps-clients) before the
# race pass, the SDK suites' own (test-deps-typescript, test-deps-python)
# in the SDK lane.
test-deps: test-deps-clients test-deps-typescript test-deps-python

test-deps-clients: test-deps-mcp-ts test-deps-openai-node test-deps-pytools

test-deps-mcp-ts:
	$(call STAMP,start)
	cd test/mcp-ts && npm ci --no-audit --no-fund
	$(call STAMP,end)

test-deps-openai-node:
	$(call STAMP,start)
	npm ci --no-audit --no-fund --prefix test/openai-clients/node
	$(call STAMP,end)

test-deps-pytools:
	$(call STAMP,start)
	python3 -m venv $(PYTOOLS)
	$(PYTOOLS)/bin/$(PIP_INSTALL) -r test/openai-clients/python/requirements.txt -r test/fuzz/requirements.txt
	$(call STAMP,end)

# The TypeScript SDK (sdk/typescript): its pinned dependencies, the tsc
# build and its suite (node --test) against the real binary, which is
# ENGRAM_TEST_BINARY when set and otherwise built by the suite. The
# dependencies are installed (npm ci) when node_modules is older than the
# lock file or missing, so that make test installs them in test-deps and
# its later make test-typescript finds them there.
TS_DEPS = sdk/typescript/node_modules/.package-lock.json

test-deps-typescript: $(TS_DEPS)

$(TS_DEPS): sdk/typescript/package-lock.json
	@echo "== test-deps-typescript start $$(date -u +%T)"
	cd sdk/typescript && npm ci --no-audit --no-fund
	touch $@
	@echo "== test-deps-typescript end $$(date -u +%T)"

test-typescript: $(TS_DEPS)
	$(call STAMP,start)
	cd sdk/typescript && npm run build && npm test
	$(call STAMP,end)

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
	@echo "== test-deps-python start $$(date -u +%T)"
	$(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/$(PIP_INSTALL) -r sdk/python/requirements-dev.txt
	touch $@
	@echo "== test-deps-python end $$(date -u +%T)"

test-python: $(PY_DEPS)
	$(call STAMP,start)
	$(PY_VENV)/bin/$(PIP_INSTALL) --no-build-isolation --no-deps --force-reinstall ./sdk/python
	$(PY_VENV)/bin/mypy --strict sdk/python/src/engram
	cd sdk/python && $(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider; rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "test-python: no tests collected" >&2; exit 1; fi; exit $$rc
	$(call STAMP,end)

# sdk-version stamps the release in VERSION into both SDKs (sdk/python's
# _version.py, sdk/typescript's package.json, package-lock.json and
# src/version.ts); each SDK's suite fails while they differ from VERSION.
# The release process is in docs/development.md.
sdk-version:
	@case "$(VERSION)" in *[!0-9A-Za-z.+-]*|"") echo "sdk-version: bad VERSION '$(VERSION)'" >&2; exit 1;; esac
	sed -i 's/^__version__ = ".*"/__version__ = "$(VERSION)"/' sdk/python/src/engram/_version.py
	sed -i 's/^export const VERSION = ".*";/export const VERSION = "$(VERSION)";/' sdk/typescript/src/version.ts
	cd sdk/typescript && npm version --no-git-tag-version --allow-same-version "$(VERSION)" >/dev/null

# gofmt reads the repository's Go files (tracked, or new and not ignored)
# rather than walking the tree: make test's other lanes write
# node_modules, virtual environments and caches into it meanwhile. go vet
# builds as test-bin does (STATIC), so that it finds the packages test-bin
# compiled in the build cache instead of compiling them again with cgo;
# no file of ours needs cgo.
lint:
	$(call STAMP,start)
	@unformatted="$$(git ls-files -z --cached --others --exclude-standard '*.go' | xargs -0 -r gofmt -l)"; if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(STATIC) $(GO) vet ./...
	$(if $(RACE_TAGGED),$(STATIC) $(GO) vet -tags race $(RACE_TAGGED))
	$(call STAMP,end)

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
