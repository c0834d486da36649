// Command forestd trains, evaluates, scores and inspects decision forests
// on Parquet, Arrow IPC and CSV data; see package cli for the commands.
package main

import (
	"os"

	"github.com/forestd/forestd/cmd/forestd/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr}))
}
