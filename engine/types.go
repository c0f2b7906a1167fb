package engine

import (
	"errors"
	"fmt"

	"github.com/superstep-dev/superstep/engine/channels"
)

// Send schedules Node to run in the next superstep with Arg as its whole
// input (no state read). Sends fan work out: a node or router returning
// several Sends to one node runs that node once per Send, in parallel.
type Send struct {
	Node string `json:"node"`
	Arg  any    `json:"arg"`
}

// Overwrite, written to a reducer channel, replaces its value instead of
// being folded in. See channels.Overwrite.
type Overwrite = channels.Overwrite

// Output is what a StateGraph node returns: an Update, Updates, a Command,
// or nil for "wrote nothing".
type Output interface{ isOutput() }

// Update is a partial state update keyed by the state's json names. A key
// that is absent was not written; a key with a zero value was written zero.
type Update map[string]any

// KV is one keyed write. Returned by a node (see Set) it is an update of
// one state key.
type KV struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// Set is an update of the one state key: the same as Update{key: value},
// without building a map. Most nodes write one key, and in a loop that
// runs every superstep the map is most of the node's cost.
func Set(key string, value any) KV { return KV{Key: key, Value: value} }

// Updates is an ordered list of writes; unlike Update it may write one key
// several times (a reducer folds them in order).
type Updates []KV

// Command updates state and routes in one return value.
type Command struct {
	// Update is applied like a node's Update (Update, Updates, a KV from Set, or nil).
	Update Output
	// Goto names nodes to run next (strings) or Sends to schedule.
	Goto []any
	// Resume answers pending interrupts when the Command is a run's input:
	// one value when a single interrupt is pending, or a map from
	// interrupt id to answer.
	Resume any
}

func (KV) isOutput()      {}
func (Update) isOutput()  {}
func (Updates) isOutput() {}
func (Command) isOutput() {}

// Errors returned by graphs; test with errors.Is.
var (
	// ErrInvalidUpdate: writes that cannot be applied (two values for a
	// LastValue key in one step, a wrong type, an unknown key).
	ErrInvalidUpdate = channels.ErrInvalidUpdate
	// ErrAmbiguousResume: a single resume value while several interrupts
	// are pending (upstream's RuntimeError "you must specify the
	// interrupt id"); it is also an ErrInvalidUpdate.
	ErrAmbiguousResume = errors.New("ambiguous resume")
	// ErrRecursionLimit: the run needed more supersteps than allowed.
	ErrRecursionLimit = errors.New("recursion limit reached")
	// ErrInvalidGraph: the graph definition is wrong (unknown node,
	// missing entry point, ...). Returned by Compile.
	ErrInvalidGraph = errors.New("invalid graph")
	// ErrEmptyInput: a run was started with no input on a thread with no
	// checkpoint to resume.
	ErrEmptyInput = errors.New("empty input")
	// ErrCheckpointMismatch: a saved checkpoint's values do not fit the
	// graph's channels (saved by another version of the graph); the error
	// names the channel and the checkpoint.
	ErrCheckpointMismatch = errors.New("checkpoint does not fit the graph")
)

// ErrInterrupted matches the error of a run that stopped at a breakpoint
// or an interrupt; the thread resumes with a nil input (or a Command).
var ErrInterrupted = errors.New("interrupted")

// Interrupted is returned, together with the state at that point, by a run
// that stopped at a breakpoint. Before and After name the breakpoint nodes.
type Interrupted struct {
	Before []string
	After  []string
	// Interrupts are the pending dynamic interrupts (Interrupt calls).
	Interrupts []Interruption
}

func (e *Interrupted) Error() string {
	switch {
	case len(e.Before) > 0:
		return fmt.Sprintf("interrupted before %v; resume with a nil input", e.Before)
	case len(e.After) > 0:
		return fmt.Sprintf("interrupted after %v; resume with a nil input", e.After)
	case len(e.Interrupts) == 1:
		return fmt.Sprintf("interrupted in node %q (interrupt %s); resume with Command{Resume: answer}", e.Interrupts[0].Node, e.Interrupts[0].ID)
	case len(e.Interrupts) > 1:
		return fmt.Sprintf("%d interrupts pending; resume with Command{Resume: map[string]any{id: answer, ...}}", len(e.Interrupts))
	}
	return "interrupted"
}

// Is makes errors.Is(err, ErrInterrupted) true.
func (e *Interrupted) Is(target error) bool { return target == ErrInterrupted }

// RecursionError is returned when a run exceeds its recursion limit.
type RecursionError struct {
	Limit int
}

func (e *RecursionError) Error() string {
	return fmt.Sprintf("recursion limit of %d supersteps reached without hitting a stop condition; "+
		"raise it with RunOptions.RecursionLimit if the graph really needs more steps", e.Limit)
}

// Is makes errors.Is(err, ErrRecursionLimit) true.
func (e *RecursionError) Is(target error) bool { return target == ErrRecursionLimit }

// permanentError marks an error that must not be retried.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent wraps err so that the default retry classifier never retries
// it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
