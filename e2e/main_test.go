package e2e

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// e2eParallel is how many of this package's tests run at once unless
// -test.parallel is given. Most tests wait on subprocesses, brokers and a
// browser rather than compute, so four at a time on a 2-core machine keeps
// the package short without crowding the CPU-bound ones.
const e2eParallel = 4

// TestMain runs the tests and then removes the forestd binary that
// forestdBin built for them, if any. (One TestMain per package: extend
// this one.)
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", fmt.Sprint(e2eParallel)); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: -test.parallel:", err)
			os.Exit(2)
		}
	}
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
