package pgfence

import (
	"context"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
)

func TestFor(t *testing.T) {
	ctx := context.Background()
	// Every write of a run without a lease asks: it must cost nothing.
	if allocs := testing.AllocsPerRun(100, func() {
		if f, err := For(ctx, "t"); f != nil || err != nil {
			t.Fatalf("For without a fence = %v, %v", f, err)
		}
	}); allocs != 0 {
		t.Errorf("For without a fence allocates %v times", allocs)
	}
	fenced := checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "t", Token: 7})
	if f, err := For(fenced, "t"); err != nil || f == nil || f.Thread != "t" || f.Token != 7 {
		t.Errorf("For with the thread's fence = %+v, %v", f, err)
	}
	if f, err := For(fenced, "other"); err == nil || f != nil {
		t.Errorf("For with another thread's fence = %+v, %v; want an error", f, err)
	}
}
