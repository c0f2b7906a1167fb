package pgsaver_test

import (
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/checkpointstest"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	checkpointstest.Exercise(t, func(t *testing.T) checkpoints.Saver {
		return pgsaver.New(pgtest.Schema(t, nil), nil)
	})
}
