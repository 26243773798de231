//go:build unix && !linux

package pgcluster

import "syscall"

// setDeathSignal does nothing: only Linux can kill a child with its parent.
func setDeathSignal(*syscall.SysProcAttr) {}

// startTime is unknown without /proc.
func startTime(int) string { return "" }

func isZombie(int) bool { return false }
