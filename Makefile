# brakebench: `make test` is what CI runs (.ci/run). The lab is built on first use.
GO        ?= go
STATICCHECK_VERSION ?= v0.8.2
# The end-to-end tests carry the e2e build tag: a plain `go test ./...` runs unit tests only.
UNIT_PKGS  = ./...

.PHONY: all build lab lab-e2e test lint unit scale e2e bench upstream-overfill clean-lab

all: build

build:
	$(GO) build -o bin/brakebench ./cmd/brakebench

# Build every lab component into the versioned cache, with the optional ones the end-to-end tests
# use: Kueue, LWS, KEDA and the real node's kubelet, containerd and CNI plugins (~40 min cold on 2
# cores, of which KEDA ~12; seconds when cached).
lab:
	$(GO) run ./cmd/brakebench lab build --with kueue,lws,keda,kubelet,containerd,cni-plugins,pause,karpenter

# What the end-to-end tests' lab up needs: the control plane, etcd, kwok, agent-sandbox and the
# real node's kubelet, containerd, CNI plugins and pause. Kueue, LWS and KEDA, which only the
# gang-quota and pool-autoscaling tests use, are built by the tests' TestMain in the background
# (nice 19) while the other tests run (test/e2e/main_test.go).
lab-e2e:
	$(GO) run ./cmd/brakebench lab build --with kubelet,containerd,cni-plugins,pause

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt: $$unformatted"; exit 1; fi
	$(GO) vet ./... && $(GO) vet -tags e2e ./test/e2e/
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) -tags e2e ./...

unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)

# Scale, no cluster: 30,000 and 100,000 claims replayed through the recorder's informers, the
# analysis and the report writers (fail above 300 and 400 MiB), a year of nightly results through
# `trend` (365 files with per-claim data; fails above 500 MiB), and the load generator alone against
# a loopback HTTPS/HTTP2 stand-in for the API server at 1,000-20,000 creates/s (fails unless it
# sustains 5,000/s: >= 95% achieved, send lag p99 < 10 ms). See README, "Scale", "Loadgen is not the
# bottleneck" and "Nightly CI".
scale:
	$(GO) test -count=1 -run '^$$' -bench 'BenchmarkScaleReplay|BenchmarkTrendYear|BenchmarkGeneratorRate' -benchtime 1x -v ./suites/ ./internal/trend/ ./loadgen/

# End-to-end tests on one embedded lab (one package, -p 1), then the loadgen benchmark on a fresh
# lab of its own: after 15 minutes of tests the lab's API server is slower and noisier, which the
# benchmark would measure instead of the generator.
e2e: lab-e2e
	$(GO) test -tags e2e -count=1 -p 1 -timeout 75m -v -run . ./test/e2e/
	$(GO) test -tags e2e -count=1 -p 1 -timeout 20m -v -run '^$$' -bench BenchmarkLoadgen -benchtime 1x ./test/e2e/

test: lint unit scale e2e

bench: lab scale
	$(GO) test -tags e2e -count=1 -run '^$$' -bench . -benchtime 1x -v ./test/e2e/

# The over-fill mechanism in agent-sandbox's own warm-pool reconciler (README, "Not done yet"): a
# test added to a throwaway copy of its extensions/controllers package, at v0.5.5 and v1.0.1.
# Not part of `make test`: it compiles agent-sandbox's test dependencies (17 min cold on 2 cores).
upstream-overfill:
	bash test/upstream/agentsandbox/run.sh

clean-lab:
	$(GO) run ./cmd/brakebench lab down
