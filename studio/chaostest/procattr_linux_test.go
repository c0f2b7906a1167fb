//go:build linux

package chaostest

import (
	"os/exec"
	"syscall"
)

func init() {
	// A replica the test paused (SIGSTOP) cannot see its stdin close:
	// the kernel kills it when the test binary dies.
	setProcAttr = func(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
}
