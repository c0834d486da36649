// Command forestd-benthos is the Redpanda Connect (Benthos) command line
// with Benthos' core components (inputs such as stdin, file, http_server
// and batched; outputs; processors such as switch, catch and mapping) and
// forestd's processors forestd_score, forestd_select and forestd_train.
// It takes Benthos' own subcommands: run (the default), lint, test, list,
// create, echo.
//
//	forestd-benthos -c pipeline.yaml
//	forestd-benthos lint pipeline.yaml
//	forestd-benthos test ./examples/...
package main

import (
	"context"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"

	_ "github.com/forestd/forestd/connectors/benthos"
)

func main() {
	service.RunCLI(context.Background(), service.CLIOptSetBinaryName("forestd-benthos"),
		service.CLIOptSetProductName("forestd-benthos (Benthos with forestd's processors)"))
}
