# forestd — common tasks. `make test` is the command CI runs (.ci/run).
GO      ?= go
BIN     ?= bin/forestd
PKGS    := ./...

.PHONY: build benthos deps test lint bench bench-peers bench-lake bench-benthos demo demo-batch fuzz clean

# connectors/benthos is a Go module of its own (Benthos' dependency tree stays
# out of forestd's go.mod); its targets run inside it.
BENTHOS := connectors/benthos

build:
	$(GO) build -o $(BIN) ./cmd/forestd

## benthos: bin/forestd-benthos, the Redpanda Connect (Benthos) CLI with forestd's processors
benthos:
	cd $(BENTHOS) && $(GO) build -o ../../bin/forestd-benthos ./cmd/forestd-benthos

## deps: install the real peers the tests drive (kcat, chromium) when missing
deps:
	bash e2e/deps.sh

# Every go test names its time limit: TEST_TIMEOUT bounds one package's test
# binary (the e2e package is the longest: under 4 minutes on an idle 2-core
# machine, so 20 minutes leaves room for a busy one).
TEST_TIMEOUT ?= 20m

## test: vet + every unit, reader and end-to-end test (reads testdata/) in both modules (forestd, then connectors/benthos); runs both even when the first fails and exits non-zero if any step failed; installs kcat and chromium first when missing
test: deps
	@fail=""; \
	$(GO) vet $(PKGS) || fail="$$fail vet"; \
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(PKGS) || fail="$$fail test"; \
	(cd $(BENTHOS) && $(GO) vet ./...) || fail="$$fail benthos-vet"; \
	(cd $(BENTHOS) && $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...) || fail="$$fail benthos-test"; \
	if [ -n "$$fail" ]; then echo "make test: failed:$$fail" >&2; exit 1; fi

## lint: formatting, vet, staticcheck and a tidy go.mod (direct dependencies not marked indirect)
lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && echo "gofmt: files above need formatting" && exit 1)
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 $(PKGS)
	$(GO) mod tidy -diff
	cd $(BENTHOS) && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./... && $(GO) mod tidy -diff

## bench: Go benchmarks of the engine (training, scoring, model codec)
bench:
	$(GO) test -timeout 60m -run '^$$' -bench . -benchtime 3x ./arrowforest/...

## bench-peers: forestd against ranger and scikit-learn side by side (installs them with apt if absent)
bench-peers:
	bash e2e/bench/peers.sh

## bench-lake: lake scoring (>= 2M rows, 100 trees) against reading alone and in-memory scoring, with peak RSS
bench-lake:
	bash e2e/bench/lake.sh

## bench-benthos: forestd_score in a Benthos stream (Arrow IPC and JSON) against forestd score, with peak RSS
bench-benthos:
	bash e2e/bench/benthos.sh

## demo: the daemon on its embedded defaults — embedded broker, simulated stream, train → hot-swap → score, stops by itself
demo: build
	$(BIN) serve --demo

## demo-batch: generate data, train, evaluate, score and inspect — the batch job end to end
demo-batch: build
	bash e2e/demo.sh $(BIN)

## fuzz: run every fuzz target for 30 s each (found, not listed: e2e/fuzz.sh; FUZZTIME=2m for longer)
FUZZTIME ?= 30s
fuzz:
	bash e2e/fuzz.sh $(FUZZTIME)

clean:
	rm -rf bin
