package frame

import (
	"errors"
	"fmt"
)

// Kinds of input errors, for callers that count or route them (the daemon's
// status page counts dead letters by kind): errors.Is(err, ErrMissingColumn)
// holds for an error about a column the input lacks, ErrColumnType for a
// column whose type cannot be read as asked. The error's text stays the
// one-line message naming the column.
var (
	ErrMissingColumn = errors.New("missing column")
	ErrColumnType    = errors.New("column of the wrong type")
	// ErrNoValues marks a training frame with a feature that has no
	// value in any row (Frame.CheckValues).
	ErrNoValues = errors.New("feature column without values")
)

// kindError is an error message of a kind.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

func missingf(format string, a ...any) error {
	return &kindError{ErrMissingColumn, fmt.Sprintf(format, a...)}
}

// MissingColumnf is an ErrMissingColumn error of the message, for a
// package that finds a column the input lacks outside frame (scoring's
// kept columns), so that callers count it with frame's own.
func MissingColumnf(format string, a ...any) error { return missingf(format, a...) }

func typef(format string, a ...any) error {
	return &kindError{ErrColumnType, fmt.Sprintf(format, a...)}
}
