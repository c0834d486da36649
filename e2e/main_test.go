package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain runs the tests and then removes the forestd binary that
// forestdBin built for them, if any. (One TestMain per package: extend
// this one.)
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
