// Package pgmajor says which PostgreSQL major versions sfgen supports, and
// refuses the others in one line of sfgen's own before anything changes.
//
// sfgen's SQL needs PostgreSQL 15 or later: release 1's migration, frozen
// as it shipped, creates an UNLOGGED sequence, which PostgreSQL 15
// introduced, and every later release upgrades from it. The majors CI runs
// the database suite on are Tested; a major above them is expected to work
// but is not shown to.
package pgmajor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Oldest is the oldest major sfgen supports.
const Oldest = 15

// Tested are the majors CI runs the database suite on (.ci/run).
var Tested = []int{15, 16, 17, 18}

// ErrUnsupported is wrapped by the *Error that [Check] returns.
var ErrUnsupported = errors.New("unsupported PostgreSQL major version")

// An Error is a server of a major sfgen does not support.
type Error struct {
	Major   int    // the server's major version, 14 say
	Version string // the server's server_version, "14.22" say
}

func (e *Error) Error() string {
	return fmt.Sprintf("PostgreSQL %d (server %s) is not supported: sfgen needs PostgreSQL %d or later (%s tested)",
		e.Major, e.Version, Oldest, tested())
}

func (e *Error) Unwrap() error { return ErrUnsupported }

// Major is the major version in server_version_num (160014 is 16).
func Major(versionNum int) int { return versionNum / 10000 }

// Check returns an *Error, wrapping [ErrUnsupported], when the server
// whose server_version_num and server_version are given is older than
// [Oldest]; nil otherwise.
func Check(versionNum int, version string) error {
	if m := Major(versionNum); m < Oldest {
		return &Error{Major: m, Version: version}
	}
	return nil
}

// Status says, in a few words, whether sfgen supports the major of
// server_version_num and whether CI tests it.
func Status(versionNum int) string {
	m := Major(versionNum)
	switch {
	case m < Oldest:
		return fmt.Sprintf("not supported (sfgen needs PostgreSQL %d or later)", Oldest)
	case m > Tested[len(Tested)-1]:
		return fmt.Sprintf("newer than any tested (%s): expected to work, not shown to", tested())
	default:
		return "supported, tested in CI"
	}
}

func tested() string {
	s := make([]string, len(Tested))
	for i, m := range Tested {
		s[i] = strconv.Itoa(m)
	}
	return strings.Join(s, ", ")
}
