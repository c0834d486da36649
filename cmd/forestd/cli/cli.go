// Package cli owns forestd's command line (ARCHITECTURE.md, Command line): flag parsing,
// wiring readers, learners and writers together, JSON reports on stdout,
// one-line errors on stderr and exit codes. Every command is reachable
// from tests through Main.
package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // bad input, failed run
	ExitUsage = 2 // unknown command or bad flags
)

// Env is what a command may touch besides files named on its command line.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	// TTY forces (true) or suppresses (false) the progress bar; nil means
	// "stderr is a terminal".
	TTY *bool
	// ProgressEvery is the interval of the progress lines written when
	// stderr is not a terminal (default 5 s; progress.go).
	ProgressEvery time.Duration
}

func (e Env) isTTY() bool {
	if e.TTY != nil {
		return *e.TTY
	}
	if f, ok := e.Stderr.(*os.File); ok {
		return term.IsTerminal(int(f.Fd()))
	}
	return false
}

type command struct {
	name    string
	summary string
	run     func(args []string, env Env) error
}

func commands() []command {
	return []command{
		{"gen", "generate a simulated data set from the papers", runGen},
		{"train", "train a forest on labelled data", runTrain},
		{"eval", "evaluate a model on labelled data (prints JSON)", runEval},
		{"score", "score data with a model and write predictions", runScore},
		{"convert", "convert a table: forestd convert IN OUT between CSV, Parquet and Arrow IPC (by extension)", runConvert},
		{"inspect", "describe a model: OOB estimates, importances (prints JSON)", runInspect},
		{"report", "write a model's or a dependence analysis' report as one HTML file (or a heatmap PNG)", runReport},
		{"analyze", "test feature-label dependence, find MDS/SDS groups (prints JSON)", runAnalyze},
		{"drift", "test whether current data drifted from a reference (energy tests, prints JSON)", runDrift},
		{"select", "write the dependent and FDM-mapped columns of labelled data", runSelect},
		{"serve", "run the Kafka daemon: score, train, hot-swap, publish (--demo to try it)", runServe},
		{"broker", "run the embedded Kafka-protocol broker alone", runBroker},
	}
}

// usageError marks errors that should exit with ExitUsage.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// checkThreads is the one rule for --threads, which parse applies to every
// command that has the flag: at least 1; the default is the number of CPUs,
// and 0 is a usage error rather than a second spelling of that default.
func checkThreads(fs *flags) error {
	if f := fs.Lookup("threads"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err != nil || n < 1 {
			return usagef("--threads must be at least 1 (default: the number of CPUs), got %s", f.Value)
		}
	}
	return nil
}

// Main runs the command line and returns the exit code.
func Main(args []string, env Env) (code int) {
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(env.Stderr)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	name := args[0]
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		defer func() {
			// No panic may escape as a crash: report it as one line.
			if r := recover(); r != nil {
				fmt.Fprintf(env.Stderr, "forestd %s: internal error: %v\n", name, r)
				code = ExitError
			}
		}()
		err := c.run(args[1:], env)
		switch {
		case err == nil:
			return ExitOK
		case errors.Is(err, flag.ErrHelp):
			return ExitOK
		}
		for _, line := range errorLines(err) {
			fmt.Fprintf(env.Stderr, "forestd %s: %s\n", name, line)
		}
		var ue usageError
		if errors.As(err, &ue) {
			return ExitUsage
		}
		return ExitError
	}
	fmt.Fprintf(env.Stderr, "forestd: unknown command %q (run forestd --help)\n", name)
	return ExitUsage
}

// errorLines is what Main prints of err: one line, or one line per
// problem of an error that joins several (errors.Join: daemon.Config.Validate
// reports every problem of a config at once). Only a join whose text is its
// problems' texts is split, so that no wrapping text is lost.
func errorLines(err error) []string {
	if u, ok := err.(usageError); ok {
		return errorLines(u.err)
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var lines, texts []string
		for _, e := range j.Unwrap() {
			lines = append(lines, errorLines(e)...)
			texts = append(texts, e.Error())
		}
		if len(lines) > 0 && strings.Join(texts, "\n") == err.Error() {
			return lines
		}
	}
	return []string{strings.Join(strings.Fields(err.Error()), " ")} // one line: newlines and runs of spaces become one space
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "forestd: decision forests and feature-dependence analysis on Arrow data")
	fmt.Fprintln(w, "\nUsage: forestd COMMAND [flags]   (forestd COMMAND --help for a command's flags)")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}

// flags is a command's flag set: errors come back as values (one line on
// stderr from Main), and the usage text is printed only for --help.
type flags struct {
	*flag.FlagSet
	usage string
	env   Env
}

func newFlagSet(name, usage string, env Env) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flags{FlagSet: fs, usage: "Usage: forestd " + name + " " + usage, env: env}
}

func (f *flags) printUsage() {
	w := f.env.Stderr
	fmt.Fprintf(w, "%s\n\nFlags:\n", f.usage)
	f.SetOutput(w)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// isSet reports whether the flag name was given on the command line
// (whatever its value: a default given explicitly is set).
func isSet(fs *flags, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parse parses flags interleaved with positional arguments ("--in a b
// --label y" gives positionals [b]); it returns the positionals.
func parse(fs *flags, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.printUsage()
				return nil, err
			}
			return nil, usageError{fmt.Errorf("%w (see forestd %s --help)", err, fs.Name())}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, checkThreads(fs)
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), checkThreads(fs)
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// listFlag is a repeatable flag; each value may also be comma-separated
// when split is true.
type listFlag struct {
	vals  []string
	split bool
}

func (l *listFlag) String() string { return strings.Join(l.vals, ",") }
func (l *listFlag) Set(s string) error {
	if l.split {
		for _, v := range strings.Split(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				l.vals = append(l.vals, v)
			}
		}
		return nil
	}
	l.vals = append(l.vals, s)
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
