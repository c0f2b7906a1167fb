package engine_test

import (
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine/enginetest"
)

// TestEngineWithMemorySaver runs the engine's checkpointer-dependent
// conformance scenarios on the memory saver; checkpoints/pgsaver runs the
// same scenarios on Postgres.
func TestEngineWithMemorySaver(t *testing.T) {
	t.Parallel()
	enginetest.Exercise(t, func(t *testing.T) checkpoints.Saver { return checkpoints.NewMemory() })
}
