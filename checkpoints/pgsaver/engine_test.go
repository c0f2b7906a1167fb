package pgsaver_test

import (
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine/enginetest"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// TestEngine runs the engine's checkpointer-dependent conformance
// scenarios on the Postgres saver, each on a fresh schema: the engine must
// behave the same whichever saver keeps its checkpoints.
func TestEngine(t *testing.T) {
	t.Parallel()
	enginetest.Exercise(t, func(t *testing.T) checkpoints.Saver {
		return pgsaver.New(pgtest.Schema(t, nil), nil)
	})
}
