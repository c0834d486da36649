package cli

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzArgs feeds arbitrary argument vectors to every command: whatever
// the flags say, forestd must answer with an exit code and at most a
// one-line error — never a panic (reported as "internal error").
func FuzzArgs(f *testing.F) {
	for _, s := range []string{
		"train\x00--trees\x00x", "eval\x00--model", "score\x00--in\x00\x00--out", "gen\x00trunk\x00--n\x00-5",
		"inspect\x00--model\x00/nonexistent", "train\x00--in\x00/dev/null\x00--label\x00y\x00--out\x00/dev/null",
		"gen\x00xor5\x00--p\x003\x00--out\x00/dev/null", "train\x00--max-features\x00-0.5", "--help",
		"select\x00--in\x00/dev/null\x00--apply\x00m\x00--out\x00o", "train\x00--forest\x00lfs\x00--lfs-min\x003",
		"train\x00--forest\x00fdm\x00--fdm-groups\x00a,b;c",
		"train\x00--in\x00/dev/null\x00--label\x00a,,b\x00--out\x00/dev/null", "train\x00--label\x00,\x00--forest\x00fdm",
		"eval\x00--model\x00/nonexistent\x00--label\x00y0,y1",
		"analyze\x00--in\x00/dev/null\x00--label\x00y\x00--alpha\x00-1", "analyze\x00--label\x00y\x00--max-rows\x001\x00--stat\x00x",
	} {
		f.Add(s)
	}
	f.Chdir(f.TempDir()) // whatever a fuzzed command writes lands in a temp dir
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		for _, a := range args {
			// stay away from real files: a fuzzer must not write outside temp
			if strings.Contains(a, "/") && a != "/nonexistent" && a != "/dev/null" {
				return
			}
			if strings.HasSuffix(a, ".parquet") || strings.HasSuffix(a, ".csv") || strings.HasSuffix(a, ".arrow") || strings.HasSuffix(a, ".arrows") || strings.HasSuffix(a, ".gz") {
				return
			}
		}
		var out, errb bytes.Buffer
		code := Main(args, Env{Stdout: &out, Stderr: &errb})
		if strings.Contains(errb.String(), "internal error") {
			t.Fatalf("args %q: %s", args, errb.String())
		}
		if code != 0 && strings.Count(strings.TrimRight(errb.String(), "\n"), "\n") > 0 && !strings.Contains(errb.String(), "Usage:") {
			t.Fatalf("args %q: multi-line error %q", args, errb.String())
		}
	})
}
