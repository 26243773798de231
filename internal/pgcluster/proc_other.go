//go:build !unix

package pgcluster

import (
	"errors"
	"os"
	"syscall"
)

type osUser struct {
	name     string
	uid, gid int
}

var errUnsupported = errors.New("throwaway clusters are supported on Unix only: set DATABASE_URL")

func procAttr(*osUser) *syscall.SysProcAttr { return nil }

func serverUser() (*osUser, error) { return nil, errUnsupported }

func interrupt(p *os.Process) error { return p.Kill() }

func quit(p *os.Process) error { return p.Kill() }

func pidExists(int) bool { return true } // never sweep

func startTime(int) string { return "" }

func killGroup(p *os.Process) error { return p.Kill() }

func chown(string, *osUser) error { return errUnsupported }

func isZombie(int) bool { return false }
