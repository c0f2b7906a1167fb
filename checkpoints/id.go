package checkpoints

import (
	"sync"

	"github.com/google/uuid"
)

var lastID struct {
	sync.Mutex
	u uuid.UUID
}

// NewID returns a new checkpoint id: a UUIDv7, whose text sorts by creation
// time, strictly greater than every id this process returned before (even
// within one millisecond, or if the wall clock steps back). Ids from
// different processes are only as ordered as their clocks, which is why
// savers also keep a per-thread sequence.
func NewID() string {
	u := uuid.Must(uuid.NewV7())
	lastID.Lock()
	defer lastID.Unlock()
	if string(u[:]) <= string(lastID.u[:]) {
		u = lastID.u
		// Count up in the 62 random bits of rand_b (byte 8 keeps its two
		// variant bits), which keeps the timestamp and the version.
		for i := 15; i >= 8; i-- {
			if i == 8 {
				u[8] = u[8]&0xc0 | (u[8]+1)&0x3f
				break
			}
			u[i]++
			if u[i] != 0 {
				break
			}
		}
	}
	lastID.u = u
	return u.String()
}
