package pgcluster

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// setDeathSignal makes the kernel SIGKILL the child when its parent dies.
// Go sets it after switching credentials, which would otherwise clear it.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// procStat returns the fields of /proc/pid/stat after the command name:
// state is index 0, start time index 19.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// startTime returns the start time of process pid in clock ticks since
// boot, or "" when unknown. With the pid it names one process for good.
func startTime(pid int) string {
	if f := procStat(pid); len(f) > 19 {
		return f[19]
	}
	return ""
}

func isZombie(pid int) bool {
	f := procStat(pid)
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}
