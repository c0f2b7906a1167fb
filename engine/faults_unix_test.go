//go:build unix

package engine_test

import "syscall"

// minorFaults is the process's minor page faults so far (first touches of
// memory the kernel had not backed yet), or -1 where unknown.
func minorFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return int64(ru.Minflt)
}
