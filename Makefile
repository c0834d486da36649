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

## test: vet + every unit, reader and end-to-end test (reads testdata/), then the same in connectors/benthos; installs kcat and chromium first when missing
test: deps
	$(GO) vet $(PKGS)
	$(GO) test -count=1 $(PKGS)
	cd $(BENTHOS) && $(GO) vet ./... && $(GO) test -count=1 ./...

## lint: formatting, vet, staticcheck and a tidy go.mod (direct dependencies not marked indirect)
lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && echo "gofmt: files above need formatting" && exit 1)
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 $(PKGS)
	$(GO) mod tidy -diff
	cd $(BENTHOS) && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./... && $(GO) mod tidy -diff

## bench: Go benchmarks of the engine (training, scoring, model codec)
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./arrowforest/...

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

## fuzz: run every fuzz target briefly
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzCutPoints -fuzztime 30s ./arrowforest/tree
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./arrowforest/model
	$(GO) test -run '^$$' -fuzz '^FuzzDRFBytes$$' -fuzztime 30s -fuzzminimizetime 200x ./arrowforest/model
	$(GO) test -run '^$$' -fuzz '^FuzzDRFPart$$' -fuzztime 30s ./arrowforest/model
	$(GO) test -run '^$$' -fuzz '^FuzzReadResponses$$' -fuzztime 30s ./arrowforest/manifold
	$(GO) test -run '^$$' -fuzz '^FuzzDRFFlags$$' -fuzztime 30s ./cmd/forestd/cli
	$(GO) test -run '^$$' -fuzz FuzzReadCSV -fuzztime 30s ./connectors/files
	$(GO) test -run '^$$' -fuzz FuzzReadParquet -fuzztime 30s ./connectors/files
	$(GO) test -run '^$$' -fuzz FuzzReadIPC -fuzztime 30s ./connectors/files
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 30s ./connectors/codec
	$(GO) test -run '^$$' -fuzz '^FuzzJSONRowsStdlib$$' -fuzztime 30s ./connectors/codec
	$(GO) test -run '^$$' -fuzz '^FuzzAssembler$$' -fuzztime 30s ./connectors/kafka
	$(GO) test -run '^$$' -fuzz '^FuzzConfig$$' -fuzztime 30s -fuzzminimizetime 5s ./daemon
	$(GO) test -run '^$$' -fuzz '^FuzzLakeFile$$' -fuzztime 30s -fuzzminimizetime 5s ./connectors/lake
	$(GO) test -run '^$$' -fuzz '^FuzzPaths$$' -fuzztime 30s ./connectors/lake
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeJob$$' -fuzztime 30s ./connectors/lakework
	$(GO) test -run '^$$' -fuzz '^FuzzParseBytes$$' -fuzztime 30s ./cmd/forestd/cli
	$(GO) test -run '^$$' -fuzz '^FuzzMessagePath$$' -fuzztime 30s -fuzzminimizetime 5s ./daemon
	$(GO) test -run '^$$' -fuzz '^FuzzPasswordFile$$' -fuzztime 30s ./connectors/broker
	$(GO) test -run '^$$' -fuzz '^FuzzSASLUser$$' -fuzztime 30s ./connectors/broker

clean:
	rm -rf bin
