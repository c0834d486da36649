package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/internal/sysmem"
)

// memoryBound is the bound a command's work must fit: --max-memory when
// given, else the machine's available memory (0: unknown, no bound), and
// what it is (boundName).
func memoryBound(flagSet bool, flagValue int64) (bound int64, what string) {
	if flagSet {
		return flagValue, boundName(flagSet)
	}
	return sysmem.Available(), boundName(flagSet)
}

// boundName names memoryBound's bound in an error.
func boundName(flagSet bool) string {
	if flagSet {
		return "--max-memory"
	}
	return "this machine's available memory; --max-memory sets another bound"
}

// memoryErr turns a forest.ErrMemory error into one line naming the flags
// that size the work and the bound (boundName).
func memoryErr(err error, trees int, flagSet bool) error {
	if !errors.Is(err, forest.ErrMemory) {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), forest.ErrMemory.Error()+": ")
	return fmt.Errorf("--trees %d: %s, the bound being %s: train fewer or smaller trees (--trees, --max-depth, --min-leaf) or on fewer rows", trees, msg, boundName(flagSet))
}
