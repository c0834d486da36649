package cli

import (
	"fmt"

	"github.com/forestd/forestd/connectors/files"
)

const convertUsage = `IN OUT

Converts a table between CSV (.csv, .csv.gz), Parquet (.parquet) and Arrow
IPC (.arrow file, .arrows stream), each named by its extension, through the
readers and writers every command uses (connectors/files): IN may also be a
directory of files with one schema. OUT is written whole or not at all (a
temporary file renamed when complete) and is never IN. The table is read
into memory: for a lake, use a Parquet-aware tool or score it as a lake.
CSV keeps no types (see README: types are inferred when read), Parquet and
Arrow IPC keep the schema and its metadata.`

// runConvert is `forestd convert IN OUT`.
func runConvert(args []string, env Env) error {
	fs := newFlagSet("convert", convertUsage, env)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("want two arguments, IN and OUT, got %d (forestd convert data.csv data.parquet)", len(pos))
	}
	in, out := pos[0], pos[1]
	if err := checkDataOut("OUT", out, false, in); err != nil {
		return err
	}
	schema, recs, err := readRecords([]string{in}, nil)
	if err != nil {
		return err
	}
	defer release(recs)
	if err := writeData(out, schema, recs, files.WriteOptions{}); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	_, err = fmt.Fprintf(env.Stderr, "forestd convert: %d rows, %d columns: %s → %s\n", rows, schema.NumFields(), in, out)
	return err
}
