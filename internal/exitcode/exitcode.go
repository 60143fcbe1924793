// Package exitcode maps errors to the process exit codes (README, exit codes),
// so the packages that decide what went wrong never call os.Exit and the
// command stays a thin mapping.
package exitcode

import (
	"context"
	"errors"
)

// The exit codes a scheduler can branch on.
const (
	OK               = 0 // published
	Error            = 1 // an error; pointer unchanged, a retry with a new job id is safe
	Usage            = 2 // bad arguments, config or date list; nothing was attempted
	GateRejected     = 3 // the gate failed; pointer unchanged, rejection record written
	AlreadyPublished = 4 // the job id is named by the pointer or its history
	NotPublished     = 5 // status or read --date: the warehouse holds no entry for that date (yet)
	// A rollback and a publish of the same date overlapped and the other
	// landed first; this one wrote nothing. Not retried by a scheduler: a
	// retry would undo the other's change (a publish retried over an
	// operator's rollback brings back what was rolled back), so a person
	// decides.
	Raced = 6

	// A command ended by a signal exits 128+signo, the shell's convention:
	// the pointer is unchanged unless its write had landed, and then the
	// publish exits 0 instead (internal/signals decides).
	Interrupted = 130 // SIGINT
	Terminated  = 143 // SIGTERM
)

// Signalled is the exit code of a command ended by signal number signo.
func Signalled(signo int) int { return 128 + signo }

// Sentinels for errors.Is: errors.Is(err, exitcode.ErrUsage) and so on.
var (
	ErrUsage            = errors.New("usage")
	ErrGateRejected     = errors.New("gate rejected")
	ErrAlreadyPublished = errors.New("job id already published")
	ErrNotPublished     = errors.New("date not published")
	ErrRaced            = errors.New("a concurrent change to the same date came first")
	ErrFailed           = errors.New("failed")
)

type coded struct {
	sentinel error
	err      error
}

func (c coded) Error() string        { return c.err.Error() }
func (c coded) Unwrap() error        { return c.err }
func (c coded) Is(target error) bool { return target == c.sentinel }

// UsageError marks err as a usage error (exit 2) without changing its text.
func UsageError(err error) error { return mark(ErrUsage, err) }

// FailedError marks err as an error (exit 1) whatever it wraps: a refusal
// that is a usage error where it is met first (credentials an object store
// refuses) is not one after the attempt's work, when a generation may even
// have been committed: "fix the command; nothing was attempted" is untrue,
// and a scheduler that fails fast on 2 would skip the safe retry.
func FailedError(err error) error { return mark(ErrFailed, err) }

// GateError marks err as a gate rejection (exit 3).
func GateError(err error) error { return mark(ErrGateRejected, err) }

// PublishedError marks err as a refusal of an already published job id (exit 4).
func PublishedError(err error) error { return mark(ErrAlreadyPublished, err) }

// NotPublishedError marks err as a date the warehouse does not hold (exit 5):
// a scheduler's sensor waits on it, so it is neither an error nor usage.
func NotPublishedError(err error) error { return mark(ErrNotPublished, err) }

func mark(sentinel, err error) error {
	if err == nil {
		return nil
	}
	return coded{sentinel: sentinel, err: err}
}

// Code returns the exit code for err: 0 for nil, 1 for anything unmarked.
// A cancelled run is 1 whatever else the error says: the user did nothing
// wrong, and a retry with a new job id is safe. When a signal cancelled it,
// the command's caller (internal/signals) replaces that with 128+signo.
func Code(err error) int {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrFailed):
		return Error
	case errors.Is(err, ErrUsage):
		return Usage
	case errors.Is(err, ErrGateRejected):
		return GateRejected
	case errors.Is(err, ErrAlreadyPublished):
		return AlreadyPublished
	case errors.Is(err, ErrNotPublished):
		return NotPublished
	case errors.Is(err, ErrRaced):
		return Raced
	default:
		return Error
	}
}
