package store

import (
	"fmt"
	"strings"

	"github.com/superstep-dev/superstep/internal/pgtext"
)

// ReservedRoot is the first label no namespace may use; upstream keeps it
// for its own bookkeeping and we keep the rule so data moves both ways.
const ReservedRoot = "langgraph"

// MaxLabelBytes and MaxNamespaceLabels bound a namespace.
const (
	MaxLabelBytes      = 256
	MaxNamespaceLabels = 64
	MaxKeyBytes        = 1024
)

// ValidateNamespace reports why ns cannot name items, or nil. A namespace
// has at least one label; labels are non-empty valid UTF-8 without "." (the
// storage separator) or NUL, and the first label is not ReservedRoot.
func ValidateNamespace(ns []string) error {
	if len(ns) == 0 {
		return fmt.Errorf("%w: a namespace needs at least one label", ErrInvalidNamespace)
	}
	if ns[0] == ReservedRoot {
		return fmt.Errorf("%w: the root label %q is reserved", ErrInvalidNamespace, ReservedRoot)
	}
	return validateLabels(ns)
}

// validateLabels checks each label of a namespace, prefix or match path.
func validateLabels(ns []string) error {
	if len(ns) > MaxNamespaceLabels {
		return fmt.Errorf("%w: %d labels, at most %d allowed", ErrInvalidNamespace, len(ns), MaxNamespaceLabels)
	}
	for i, l := range ns {
		switch {
		case l == "":
			return fmt.Errorf("%w: label %d is empty", ErrInvalidNamespace, i)
		case strings.Contains(l, "."):
			return fmt.Errorf("%w: label %d (%q) contains \".\"", ErrInvalidNamespace, i, l)
		case len(l) > MaxLabelBytes:
			return fmt.Errorf("%w: label %d is %d bytes, at most %d allowed", ErrInvalidNamespace, i, len(l), MaxLabelBytes)
		}
		if p := pgtext.Problem(l); p != "" {
			return fmt.Errorf("%w: label %d %s", ErrInvalidNamespace, i, p)
		}
	}
	return nil
}

// ValidateKey reports why key cannot name an item, or nil.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: the key is empty", ErrInvalidKey)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("%w: the key is %d bytes, at most %d allowed", ErrInvalidKey, len(key), MaxKeyBytes)
	}
	if p := pgtext.Problem(key); p != "" {
		return fmt.Errorf("%w: the key %s", ErrInvalidKey, p)
	}
	return nil
}

// JoinNamespace is the storage form of a namespace: its labels joined with
// ".". It is unambiguous because labels never contain ".".
func JoinNamespace(ns []string) string { return strings.Join(ns, ".") }

// SplitNamespace inverts JoinNamespace.
func SplitNamespace(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ".")
}

// Matches reports whether ns satisfies the condition ("*" matches any one
// label).
func (c MatchCondition) Matches(ns []string) bool {
	if len(c.Path) > len(ns) {
		return false
	}
	off := 0
	if c.Type == MatchSuffix {
		off = len(ns) - len(c.Path)
	}
	for i, l := range c.Path {
		if l != "*" && ns[off+i] != l {
			return false
		}
	}
	return true
}

func validateCondition(c MatchCondition) error {
	if c.Type != MatchPrefix && c.Type != MatchSuffix {
		return fmt.Errorf("%w: match type %q is neither %q nor %q", ErrInvalidOp, c.Type, MatchPrefix, MatchSuffix)
	}
	if len(c.Path) == 0 {
		return fmt.Errorf("%w: a %s match condition needs a path", ErrInvalidOp, c.Type)
	}
	if err := validateLabels(c.Path); err != nil {
		return fmt.Errorf("%s match condition: %w", c.Type, err)
	}
	return nil
}
