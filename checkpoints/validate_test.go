package checkpoints_test

import (
	"context"
	"errors"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
)

func TestCheckValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`"plain"`, true},
		{`{"a":[1,2,{"b":null}]}`, true},
		{`"\ud83d\ude00"`, true},     // a surrogate pair
		{`"\\u0000"`, true},          // an escaped backslash, then text
		{`"\\\u00e9"`, true},         // backslash then é
		{`"\"\ud800\udc00\""`, true}, // pair between escaped quotes
		{`"a\u0000b"`, false},        // escaped NUL
		{"\"a\x00b\"", false},        // raw NUL
		{`"\ud800"`, false},          // lone high
		{`"\ud800\u0041"`, false},    // high then a non-surrogate
		{`"\udfff"`, false},          // lone low
		{`"\udc00\ud800"`, false},    // reversed pair
		{`"x\ud800`, false},          // truncated
		{"\"\xed\xa0\x80\"", false},  // a surrogate encoded as UTF-8
		{"\"\xff\"", false},          // invalid UTF-8
		{``, false},                  // empty
		{`{"a":1,}`, false},          // not JSON
	} {
		err := checkpoints.CheckValue([]byte(tc.in))
		if tc.ok && err != nil {
			t.Errorf("CheckValue(%q) = %v, want ok", tc.in, err)
		}
		if !tc.ok && !errors.Is(err, checkpoints.ErrInvalidValue) {
			t.Errorf("CheckValue(%q) = %v, want ErrInvalidValue", tc.in, err)
		}
	}
}

func TestNewIDIsStrictlyIncreasing(t *testing.T) {
	t.Parallel()
	prev := checkpoints.NewID()
	for range 100000 {
		id := checkpoints.NewID()
		if id <= prev {
			t.Fatalf("NewID() = %s after %s", id, prev)
		}
		if len(id) != 36 || id[14] != '7' {
			t.Fatalf("NewID() = %s, not a UUIDv7", id)
		}
		prev = id
	}
}

// Both savers refuse the same unusable thread ids through the shared checks.
func TestThreadIDChecksAreShared(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, dst string }{{"", "b"}, {"a", "a"}, {"\xff", "b"}, {"a", "b\x00"}} {
		if err := checkpoints.CheckCopy(tc.src, tc.dst); !errors.Is(err, checkpoints.ErrInvalidConfig) {
			t.Errorf("checkpoints.CheckCopy(%q, %q) = %v, want checkpoints.ErrInvalidConfig", tc.src, tc.dst, err)
		}
	}
	if err := checkpoints.CheckDelete(""); !errors.Is(err, checkpoints.ErrInvalidConfig) {
		t.Errorf("checkpoints.CheckDelete(\"\") = %v", err)
	}
	m := checkpoints.NewMemory()
	if err := m.CopyThread(context.Background(), "\xff", "b"); !errors.Is(err, checkpoints.ErrInvalidConfig) {
		t.Errorf("memory CopyThread with invalid UTF-8 = %v, want checkpoints.ErrInvalidConfig", err)
	}
}
