package gguf

import "fmt"

// FormatError reports malformed GGUF input at a byte offset.
type FormatError struct {
	Offset int64  // byte offset in the file where the problem was found
	Msg    string // what is wrong
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf: at byte %d: %s", e.Offset, e.Msg)
}

func formatErr(off int64, format string, args ...any) error {
	return &FormatError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}
