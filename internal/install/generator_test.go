package install

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

func ptr(v int64) *int64 { return &v }

// TestRunKeepsTheNode checks Run's node check: on a schema that has
// sfgen, a node asked for must be its node (a field not asked for is the
// schema's), and any other is ErrNodeKept before anything is applied; a
// schema left without a node is reported.
func TestRunKeepsTheNode(t *testing.T) {
	ctx := context.Background()
	db, schema := database(t)
	conn, err := pgx.Connect(ctx, dsnOf(t, db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	o := Options{SQL: sqlgen.Options{Schema: schema, Layout: snowflake.Twitter(), Datacenter: 1, Machine: 2}, Node: &Node{Datacenter: ptr(1), Machine: ptr(2)}}
	rep, err := Run(ctx, db, conn, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Applied) != 1 || rep.NodeUnset || rep.Generator != Unchanged {
		t.Errorf("first Run: %+v, %+v; want the latest release's file applied, a node, the generator unchanged", rep, rep.Result)
	}
	o.Node = &Node{Machine: ptr(2)}
	if rep, err = Run(ctx, db, conn, o); err != nil || len(rep.Applied) != 0 {
		t.Errorf("Run asking for machine 2 only: %v, %+v; want nothing applied", err, rep)
	}
	o.Node = &Node{Datacenter: ptr(3)}
	rep, err = Run(ctx, db, conn, o)
	want := "schema " + schema + " already has sfgen with node datacenter 1, machine 2, which install keeps; to move it to datacenter 3, machine 2 run 'sfgen node --schema " + schema + " --datacenter 3 --machine 2'"
	if !errors.Is(err, ErrNodeKept) || rep != nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Run asking for datacenter 3: %v, %+v; want ErrNodeKept, %q", err, rep, want)
	}

	_, unset := database(t)
	o = Options{SQL: sqlgen.Options{Schema: unset, Layout: snowflake.Twitter(), UnsetNode: true}}
	if rep, err = Run(ctx, db, conn, o); err != nil || !rep.NodeUnset {
		t.Fatalf("Run without a node: %v, %+v; want NodeUnset", err, rep)
	}
	o.Node = &Node{Machine: ptr(1)}
	if _, err = Run(ctx, db, conn, o); !errors.Is(err, ErrNodeKept) || !strings.Contains(err.Error(), "already has sfgen, with no node set") {
		t.Errorf("Run asking for a node over none: %v; want ErrNodeKept", err)
	}
}

// TestStepErrorMessage checks that a StepError's cause is written by
// Message's func (the CLI's, which hides passwords) and that it unwraps
// to its kind and cause.
func TestStepErrorMessage(t *testing.T) {
	cause := errors.New("password=hunter2")
	err := &StepError{Kind: ErrGeneratorSwitch, Cause: cause, text: func(c string) string { return "switch back: " + c }}
	if got := err.Message(func(error) string { return "xxxxx" }); got != "switch back: xxxxx" {
		t.Errorf("Message = %q", got)
	}
	if got := err.Error(); got != "switch back: password=hunter2" {
		t.Errorf("Error = %q", got)
	}
	if !errors.Is(err, ErrGeneratorSwitch) || !errors.Is(err, cause) {
		t.Errorf("%v does not unwrap to its kind and cause", err)
	}
	if got := NativeDir("/srv", snowflake.Twitter().String()); !strings.HasPrefix(got, "/srv/sfgen-") || len(got) != len("/srv/sfgen-")+12 {
		t.Errorf("NativeDir = %q; want /srv/sfgen-<12 hex digits>", got)
	}
}
