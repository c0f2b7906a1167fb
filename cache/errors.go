package cache

import (
	"errors"
	"fmt"

	"github.com/superstep-dev/superstep/internal/pgtext"
)

// ErrInvalid marks bad input to a Cache: an empty or malformed namespace or
// key, a negative TTL, or a negative List limit. Test with errors.Is; the
// wrapping message says which input was wrong.
var ErrInvalid = errors.New("cache: invalid input")

// Validate reports whether k can be stored by every implementation: both
// parts non-empty, valid UTF-8 and free of NUL bytes (Postgres text cannot
// hold them, and the memory cache must accept no more than Postgres does,
// or a graph would work in tests and fail in production).
func (k Key) Validate() error {
	if err := ValidateNamespace(k.Namespace); err != nil {
		return err
	}
	if err := validText("key", k.Key); err != nil {
		return fmt.Errorf("%w (namespace %q)", err, k.Namespace)
	}
	return nil
}

// Validate reports whether e can be stored: a valid key and a TTL that is
// not negative. A nil or empty Value is allowed (a node may write nothing).
func (e Entry) Validate() error {
	if err := e.Key.Validate(); err != nil {
		return err
	}
	if e.TTL < 0 {
		return fmt.Errorf("%w: TTL %v of %q/%q is negative; use 0 for no expiry", ErrInvalid, e.TTL, e.Key.Namespace, e.Key.Key)
	}
	return nil
}

// ValidateNamespace reports whether ns is a usable namespace, under the
// same rules as Key.Validate.
func ValidateNamespace(ns string) error {
	return validText("namespace", ns)
}

// ValidateLimit reports whether limit is a usable List limit (0 = none).
func ValidateLimit(limit int) error {
	if limit < 0 {
		return fmt.Errorf("%w: list limit %d is negative; use 0 for no limit", ErrInvalid, limit)
	}
	return nil
}

func validText(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalid, what)
	}
	if p := pgtext.Problem(s); p != "" {
		return fmt.Errorf("%w: %s %q %s", ErrInvalid, what, s, p)
	}
	return nil
}
