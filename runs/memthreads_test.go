package runs_test

import (
	"testing"

	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/runstest"
)

func TestMemoryThreadsConformance(t *testing.T) {
	t.Parallel()
	runstest.Exercise(t, func(*testing.T) runs.ThreadStore { return runs.NewMemoryThreads() })
}

func TestMemoryRunLogConformance(t *testing.T) {
	t.Parallel()
	runstest.ExerciseRunLog(t, func(*testing.T) runs.RunLog { return runs.NewMemoryRunLog() })
}
