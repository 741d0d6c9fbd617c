// Command brakebench is a chaos-and-benchmark harness for Kubernetes control-loop brakes.
package main

import (
	"os"

	"github.com/brakebench/brakebench/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
