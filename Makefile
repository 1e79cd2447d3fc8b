# caddy-edgekit. The two commands a new user needs: `make run` and `make test`.
GO       ?= go
BIN      := bin/caddy
XCADDY   ?= $(shell $(GO) env GOPATH)/bin/xcaddy

.PHONY: all build run test vet fmt bench fuzz xcaddy clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/caddy

# Serves caddyfile_examples/quickstart.Caddyfile on http://localhost:8080 with
# embedded defaults: no Redis or PostgreSQL needed.
run: build
	$(BIN) run --config caddyfile_examples/quickstart.Caddyfile --adapter caddyfile

# Finds or starts Redis, a Redis Cluster and PostgreSQL (see scripts/services.sh),
# then go vet and go test -race.
test:
	bash scripts/test.sh

vet:
	$(GO) vet ./...

# goimports with this module's imports grouped last (installed when missing).
GOIMPORTS := $(shell $(GO) env GOPATH)/bin/goimports
fmt:
	test -x $(GOIMPORTS) || $(GO) install golang.org/x/tools/cmd/goimports@v0.45.0
	$(GOIMPORTS) -l -w -local github.com/edgekit/caddy-edgekit .

# A custom Caddy built by xcaddy from this checkout (takes ~3 minutes cold); see xcaddy.md.
xcaddy:
	test -x $(XCADDY) || $(GO) install github.com/caddyserver/xcaddy/cmd/xcaddy@v0.4.5
	$(XCADDY) build --output bin/caddy-xcaddy --with github.com/edgekit/caddy-edgekit@v0.0.0=.

clean:
	rm -rf bin

# End-to-end benchmark table against Caddy's own baselines (wrk + vegeta; see scripts/bench.sh),
# the Go benchmarks, the dashboard's list render time in Chromium (TestUIListRender), and
# 1,000,000 NDJSON links through `caddy shortener import` (scripts/bench_import.sh; BENCH_IMPORT=0 skips it).
bench:
	bash scripts/bench.sh
	bash scripts/bench_import.sh
	$(GO) test -run '^$$' -bench . -benchmem ./ratelimit/ ./shortener/
	bash scripts/browser.sh
	$(GO) test -tags uibench -count=1 -run TestUIListRender -v ./shortener/

# Every fuzz target for FUZZTIME (default 30s) each.
fuzz:
	bash scripts/fuzz.sh

# Fault-injection, failover (Sentinel, Cluster), reload and attack scenarios
# alone and verbose (make test runs them too; -short skips the long ones);
# see docs/failure-modes.md.
chaos:
	bash scripts/chaos.sh

# Not in CI: TestSoak (build tag soak), SOAK_DURATION (default 30m) of mixed traffic against Caddy
# with Redis and PostgreSQL restarts; heap, goroutines, fds and clicks checked.
soak:
	bash scripts/soak.sh

.PHONY: chaos soak

# The dashboard's pages at desktop and phone widths on fixed data, into
# docs/screenshots/ (TestUIScreenshots, build tag screenshots; Chromium and
# playwright-core from scripts/browser.sh).
screenshots:
	bash scripts/browser.sh
	SCREENSHOTS_DIR=$(CURDIR)/docs/screenshots $(GO) test -tags screenshots -count=1 -run TestUIScreenshots -v ./shortener/

.PHONY: screenshots
