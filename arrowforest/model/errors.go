package model

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors returned (wrapped) by Decode. Test with errors.Is. Every
// error Decode returns is a single line of text.
var (
	// ErrNotModel: the input is not an Arrow IPC stream, or it is an Arrow
	// stream without forestd model metadata.
	ErrNotModel = errors.New("not a forestd model")
	// ErrTruncated: the input ends before the end-of-stream marker (any
	// strict prefix of a valid model).
	ErrTruncated = errors.New("truncated model")
	// ErrChecksum: the content does not match forestd.checksum or
	// forestd.model_id.
	ErrChecksum = errors.New("model checksum mismatch")
	// ErrFutureVersion: the model was written in a newer format version
	// than this reader supports.
	ErrFutureVersion = errors.New("model format version is newer than supported")
	// ErrCorrupt: the bytes cannot be decoded as Arrow IPC, or the decoded
	// model is structurally invalid.
	ErrCorrupt = errors.New("corrupt model")
)

// modelError carries a sentinel kind, an optional cause and a one-line
// message.
type modelError struct {
	kind  error
	msg   string
	cause error
}

func (e *modelError) Error() string { return e.msg }

func (e *modelError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.cause}
	}
	return []error{e.kind}
}

// newError builds "<kind>: <detail>[: <cause>]" on one line.
func newError(kind, cause error, format string, args ...any) error {
	msg := kind.Error() + ": " + fmt.Sprintf(format, args...)
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &modelError{kind: kind, msg: oneLine(msg), cause: cause}
}

// wrapCorrupt marks err (a forest that fails forest.Validate) as
// ErrCorrupt: "corrupt model: " and err's text, err kept for errors.As.
func wrapCorrupt(err error) error {
	return &modelError{kind: ErrCorrupt, msg: oneLine(ErrCorrupt.Error() + ": " + err.Error()), cause: err}
}

func corrupt(format string, args ...any) error { return newError(ErrCorrupt, nil, format, args...) }

func truncated(format string, args ...any) error { return newError(ErrTruncated, nil, format, args...) }

func notModel(format string, args ...any) error { return newError(ErrNotModel, nil, format, args...) }

func futureVersion(v int64) error {
	return &modelError{kind: ErrFutureVersion, msg: fmt.Sprintf(
		"model format version %d is newer than this forestd supports (%d); upgrade forestd", v, FormatVersion)}
}

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(strings.NewReplacer("\r", " ", "\n", "; ").Replace(s)), " ")
}
