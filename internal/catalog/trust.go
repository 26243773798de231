package catalog

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUntrusted is matched (errors.Is) by an *UntrustedError.
var ErrUntrusted = errors.New("schema not trusted")

// An UntrustedError says why sfgen does not call the functions of a
// schema: other roles' objects under sfgen's names (Foreign), or roles
// that could create them (Writers). Either lets another role make a
// qualified call of sfgen's ambiguous, or run its own code instead, as the
// caller (who may be a superuser).
type UntrustedError struct {
	Schema  Schema
	Owner   string   // sfgen's owner, as Installed.Owner
	Foreign []string // as Installed.Foreign
	Writers []string // as Installed.Writers
}

func (e *UntrustedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schema %s is not trusted: ", e.Schema)
	var why []string
	if len(e.Foreign) > 0 {
		why = append(why, fmt.Sprintf("it has %s under sfgen's names, which sfgen did not create as role %s", strings.Join(e.Foreign, ", "), e.Owner))
	}
	if len(e.Writers) > 0 {
		who := "role " + strings.Join(e.Writers, ", role ")
		if len(e.Writers) > 1 {
			who = "roles " + strings.Join(e.Writers, ", ")
		}
		if e.Writers[0] == "PUBLIC" && len(e.Writers) == 1 {
			who = "every role (PUBLIC)"
		}
		why = append(why, fmt.Sprintf("%s can create objects in it, such as overloads of sfgen's functions", who))
	}
	b.WriteString(strings.Join(why, ", and "))
	b.WriteString("; sfgen runs its functions only in a schema where no role but their owner (and superusers) can create objects: ")
	var fix []string
	if len(e.Foreign) > 0 {
		fix = append(fix, "drop the objects sfgen did not create")
	}
	for _, w := range e.Writers {
		fix = append(fix, fmt.Sprintf("REVOKE CREATE ON SCHEMA %s FROM %s", e.Schema.Quoted(), w))
	}
	b.WriteString(strings.Join(fix, "; "))
	b.WriteString(", or install sfgen into a schema of its own (--schema)")
	return b.String()
}

// Is reports whether target is ErrUntrusted.
func (e *UntrustedError) Is(target error) bool { return target == ErrUntrusted }
