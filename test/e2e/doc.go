// Package e2e holds the end-to-end tests on the embedded lab. They carry the e2e build tag, so a
// plain `go test ./...` runs unit tests only; `make e2e` (part of `make test`) runs them with
// `-tags e2e`, one package, -p 1, on one lab.
package e2e
