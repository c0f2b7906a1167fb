package pgthreads_test

import (
	"testing"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/runs/runstest"
)

// TestConformance runs the suite in a transaction per case, rolled back at
// the end: each case sees an empty registry and nothing is committed.
func TestConformance(t *testing.T) {
	t.Parallel()
	runstest.Exercise(t, func(t *testing.T) runs.ThreadStore {
		return pgthreads.New(pgtest.Tx(t))
	})
}

// TestRunLogConformance runs the run log's suite the same way.
func TestRunLogConformance(t *testing.T) {
	t.Parallel()
	runstest.ExerciseRunLog(t, func(t *testing.T) runs.RunLog {
		return pgthreads.NewRunLog(pgtest.Tx(t))
	})
}

// TestAssistantsConformance runs the assistants' suite the same way.
func TestAssistantsConformance(t *testing.T) {
	t.Parallel()
	runstest.ExerciseAssistants(t, func(t *testing.T) runs.AssistantStore {
		return pgthreads.NewAssistants(pgtest.Tx(t))
	})
}
