package analysis

// The brake and fault types register their metrics in the catalogue from their own packages
// (init), which this package does not import (they talk to a cluster): its tests link them, as
// the command does.
import (
	_ "github.com/brakebench/brakebench/faults"
	_ "github.com/brakebench/brakebench/internal/brakes"
)
