package cli

import (
	"errors"
	"fmt"
	"net/http"
)

// Exit codes of every `caddy shortener` command (docs/cli.md lists them).
const (
	ExitOK       = 0 // done
	ExitUsage    = 1 // bad flags or arguments, or the API refused a value (400, 413, 415, 422)
	ExitNotFound = 2 // no such link (404), or it is gone (410)
	ExitAuth     = 3 // no key, or the API refused it (401, 403)
	ExitConflict = 4 // the code is taken or the link changed (409, 412); an import with conflicts or refusals
	ExitServer   = 5 // the server failed (5xx), could not be reached, or answered something unexpected
)

// cmdError is an error with the exit code it ends the command with.
type cmdError struct {
	code int
	msg  string
}

func (e *cmdError) Error() string { return e.msg }

// usageErr is a bad flag or argument (exit 1).
func usageErr(format string, args ...any) error {
	return &cmdError{ExitUsage, fmt.Sprintf(format, args...)}
}

// exitErr is an error with the given exit code.
func exitErr(code int, format string, args ...any) error {
	return &cmdError{code, fmt.Sprintf(format, args...)}
}

// exitCodeOf maps an error to the exit code the command ends with.
func exitCodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	if ce, ok := errors.AsType[*cmdError](err); ok {
		return ce.code
	}
	if ae, ok := errors.AsType[*APIError](err); ok {
		if ae.NotAPI {
			return ExitServer
		}
		return exitCodeOfStatus(ae.Status)
	}
	return ExitServer
}

// exitCodeOfStatus maps an HTTP status of the API to an exit code.
func exitCodeOfStatus(status int) int {
	switch {
	case status < 400:
		return ExitOK
	case status == http.StatusNotFound || status == http.StatusGone:
		return ExitNotFound
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ExitAuth
	case status == http.StatusConflict || status == http.StatusPreconditionFailed:
		return ExitConflict
	case status < 500:
		return ExitUsage
	default:
		return ExitServer
	}
}
