//go:build unix

package pgcluster

import (
	"errors"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// procAttr returns the attributes postgres and initdb are started with:
// their own process group, death with their parent where the system offers
// it, and, when asUser is set, the credentials of that user.
func procAttr(asUser *osUser) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if asUser != nil {
		attr.Credential = &syscall.Credential{Uid: uint32(asUser.uid), Gid: uint32(asUser.gid)}
	}
	setDeathSignal(attr)
	return attr
}

// osUser is the unprivileged user the server runs as when we are root.
type osUser struct {
	name     string
	uid, gid int
}

// serverUser returns nil when the server can run as the current user, and
// the OS user postgres when the current user is root.
func serverUser() (*osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root, and initdb refuses root, but there is no OS user postgres to run the server as: " + err.Error())
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, errors.New("OS user postgres has a non-numeric uid or gid")
	}
	if uid == 0 {
		return nil, errors.New("OS user postgres is root")
	}
	return &osUser{name: u.Username, uid: uid, gid: gid}, nil
}

// interrupt asks the postmaster for a fast shutdown.
func interrupt(p *os.Process) error { return p.Signal(syscall.SIGINT) }

// quit asks the postmaster for an immediate shutdown: no checkpoint, so the
// next start recovers from WAL.
func quit(p *os.Process) error { return p.Signal(syscall.SIGQUIT) }

// pidExists reports whether a process with this pid exists and is not a
// zombie.
func pidExists(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !isZombie(pid)
}

// killGroup SIGKILLs the process group that p leads.
func killGroup(p *os.Process) error {
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		return p.Kill()
	}
	return nil
}

// chown gives path to u.
func chown(path string, u *osUser) error { return os.Chown(path, u.uid, u.gid) }
