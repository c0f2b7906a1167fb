//go:build !unix

package engine_test

// minorFaults is unknown off unix.
func minorFaults() int64 { return -1 }
