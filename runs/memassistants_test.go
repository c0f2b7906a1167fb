package runs_test

import (
	"testing"

	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/runstest"
)

func TestMemoryAssistantsConformance(t *testing.T) {
	t.Parallel()
	runstest.ExerciseAssistants(t, func(t *testing.T) runs.AssistantStore { return runs.NewMemoryAssistants() })
}
