package checkpoints_test

import (
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/checkpointstest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	checkpointstest.Exercise(t, func(*testing.T) checkpoints.Saver { return checkpoints.NewMemory() })
}
