package atomicfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteErrorNamesPath: a file that cannot be created (its directory
// is missing) is named in the error, not its hidden temporary name.
func TestWriteErrorNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodir", "x.model")
	err := Write(context.Background(), path, func(*os.File) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), path+": ") || strings.Contains(err.Error(), ".tmp-") {
		t.Fatalf("error %v: want one naming %s, not the temporary file", err, path)
	}
}
