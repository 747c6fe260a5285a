# Engram. `make run` starts the server on the embedded default; `make test`
# runs every test (the command CI runs).
GO        ?= go
BIN       ?= bin/engram
BENCH     ?= .
BENCHTIME ?= 1s

.PHONY: build run test lint bench bench-quality bench-load clean

build:
	$(GO) build -o $(BIN) ./cmd/engram

run:
	$(GO) run ./cmd/engram serve

test: lint
	$(GO) test -race -count=1 -timeout 20m ./...

lint:
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem ./...

clean:
	rm -rf bin
