package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A quick start of README.md that the test runs: a ```sh block preceded
// by the line "<!-- runnable -->", under the "### " heading it belongs to.
type quickStart struct {
	section, script string
}

var runnableBlock = regexp.MustCompile("(?s)<!-- runnable -->\n```sh\n(.*?\n)```\n")

// readmeQuickStarts returns README's runnable shell blocks in order.
func readmeQuickStarts(t *testing.T) []quickStart {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	var qs []quickStart
	for _, m := range runnableBlock.FindAllStringSubmatchIndex(s, -1) {
		section := ""
		if h := strings.LastIndex(s[:m[0]], "\n### "); h >= 0 {
			section = strings.TrimSpace(s[h+len("\n### "):][:strings.Index(s[h+len("\n### "):], "\n")])
		}
		qs = append(qs, quickStart{section, s[m[2]:m[3]]})
	}
	return qs
}

// loopbackPort matches the fixed loopback addresses the blocks use (the
// daemon's embedded broker, its ops endpoint).
var loopbackPort = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// TestReadmeQuickStarts runs README's runnable quick starts as printed, in
// order, in one temporary directory, with the built forestd first on PATH:
// your own CSV (train, eval, score, select, report), the daemon with kcat
// (a background `forestd serve`, polled for /readyz, JSON rows in and JSON
// predictions out, stopped by SIGTERM) and a Parquet lake. The only change
// made to a block is that each fixed 127.0.0.1 port becomes a free one, so
// that the test runs beside others. Then it checks what the blocks say they
// make.
func TestReadmeQuickStarts(t *testing.T) {
	t.Parallel()
	needKcat(t)
	bin := forestdBin(t)
	qs := readmeQuickStarts(t)
	want := []string{"Your own CSV", "The daemon with kcat", "A Parquet lake"}
	var got []string
	for _, q := range qs {
		got = append(got, q.section)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("README's runnable quick starts are under %q, want one block each under %q", got, want)
	}
	dir := t.TempDir()
	ports := map[string]string{}
	var stdout bytes.Buffer
	for _, q := range qs {
		script := loopbackPort.ReplaceAllStringFunc(q.script, func(addr string) string {
			if ports[addr] == "" {
				ports[addr] = freePort(t)
			}
			return ports[addr]
		})
		out := runQuickStart(t, dir, filepath.Dir(bin), q.section, script)
		stdout.WriteString(out)
	}
	out := stdout.String()
	for _, f := range []string{"train.csv", "test.csv", "churn.model", "predictions.csv", "selected.csv", "selected.fdm.json", "report.html", "train.parquet",
		"scored/day=1/part-0.parquet", "scored/day=2/part-0.parquet", "scored/day=3/part-0.parquet", "lake.model"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the quick starts made no %s: %v", f, err)
		}
	}
	head, err := os.ReadFile(filepath.Join(dir, "predictions.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(head), "\n"); first != "model_id,model_version,source,row,id,prediction,prob_no,prob_yes" {
		t.Errorf("predictions.csv header %q", first)
	}
	// the daemon's two JSON predictions, each with its id
	for _, id := range []string{`"id":1001,`, `"id":1002,`} {
		if !regexp.MustCompile(`(?m)^\{"model_id":"[0-9a-f]+","model_version":1,"source":"forestd\.features/[0-9]+/[0-9]+","row":0,` + regexp.QuoteMeta(id) + `"prediction":"(yes|no)"`).MatchString(out) {
			t.Errorf("no JSON prediction with %s in the daemon block's output:\n%s", id, out)
		}
	}
	if !strings.Contains(out, `"resumed": 3`) {
		t.Errorf("the lake's --resume run did not skip the 3 finished files:\n%s", out)
	}
}

// runQuickStart runs one block with bash -euo pipefail and returns its
// stdout. The block runs in a process group of its own, killed whole when
// it ends, so that a background daemon it started cannot outlive a failure.
func runQuickStart(t *testing.T, dir, binDir, section, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever the block left running
	}
	if err != nil {
		t.Fatalf("README quick start %q: %v (timeout: %v)\n--- script:\n%s--- stdout:\n%s--- stderr:\n%s", section, err, ctx.Err() != nil, script, out.String(), errb.String())
	}
	return out.String()
}

// TestReadmeTestCommand: the test command README gives a newcomer is
// exactly the command .ci/run runs.
func TestReadmeTestCommand(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, two, ok := strings.Cut(string(b), "\n## Two commands\n")
	if !ok {
		t.Fatal("README has no section \"Two commands\"")
	}
	two, _, _ = strings.Cut(two, "\n## ")
	var readme []string
	for _, line := range strings.Split(two, "\n") {
		if strings.HasPrefix(line, "make ") {
			cmd, _, _ := strings.Cut(line, "#")
			readme = append(readme, strings.TrimSpace(cmd))
		}
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, line := range strings.Split(string(ci), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			last = l
		}
	}
	if len(readme) != 2 || readme[1] != last {
		t.Fatalf("README's two commands %q; .ci/run ends with %q: README's test command must be what CI runs", readme, last)
	}
}
