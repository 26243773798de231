package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// A generatorChoice is what install does with snowflake_next_id()'s
// implementation: keep the one the schema has, or switch to one.
type generatorChoice int

const (
	generatorKeep   generatorChoice = iota // no --native flag
	generatorNative                        // --native
	generatorSQL                           // --native=false
)

// A generatorPlan is what install found and built, before it applies the
// release line, for finishGenerator to carry out after it.
type generatorPlan struct {
	want     generatorChoice
	conn     *pgx.Conn // nil when there is nothing to do
	before   string    // the native library the schema used before, if any
	library  string    // with --native: the library built for the layout
	schema   string
	buildDir string
}

func (p *generatorPlan) close() {
	if p.conn != nil {
		p.conn.Close(context.Background())
	}
}

// nativeDir is where --native builds the library for layout spec under
// dir: a directory per layout, since the layout is compiled in and the
// server keeps a loaded library by its path.
func nativeDir(dir, spec string) string {
	sum := sha256.Sum256([]byte(spec))
	return filepath.Join(dir, "sfgen-"+hex.EncodeToString(sum[:6]))
}

// buildFailure says why native.Build failed: the machine lacks what it
// needs, or the build itself failed.
func buildFailure(err error) string {
	if errors.Is(err, native.ErrNoPGConfig) || errors.Is(err, native.ErrNoHeaders) || errors.Is(err, native.ErrNoToolchain) {
		return "it cannot be built on this machine"
	}
	return "its build failed"
}

// generatorFlags reads --native (unset: keep; =false: the SQL
// generator) and checks --native-dir against it; dirHelp says, in the
// error for a missing --native-dir, what the directory is for.
func (c *cli) generatorFlags(native bool, dir, dirHelp string) (want generatorChoice, code int, ok bool) {
	want = generatorKeep
	if c.flagSet("native") {
		want = generatorSQL
		if native {
			want = generatorNative
		}
	}
	switch {
	case want == generatorNative && dir == "":
		return want, c.usageError("--native needs --native-dir DIR: %s", dirHelp), false
	case want == generatorNative && !filepath.IsAbs(dir):
		return want, c.usageError("--native-dir %q is not absolute: the database server loads the library by its full path", dir), false
	case want != generatorNative && dir != "":
		return want, c.usageError("--native-dir goes with --native"), false
	}
	return want, exitOK, true
}

// prepareGenerator reads which generator schema o.Schema has and, for
// --native, checks that the connecting role is a superuser and builds the
// library: all before install changes anything, so that when the native
// generator is not available nothing is. When it cannot, it has printed
// one line and returns the exit status with ok false.
func (c *cli) prepareGenerator(ctx context.Context, dsn string, o sqlgen.Options, want generatorChoice, dir string) (p *generatorPlan, code int, ok bool) {
	p = &generatorPlan{want: want, schema: o.Schema}
	conn, err := connect.Connect(ctx, dsn)
	if err != nil {
		return nil, c.connectError(err), false
	}
	p.conn = conn
	if p.before, err = native.InstalledLibrary(ctx, conn, o.Schema); err != nil {
		p.close()
		return nil, c.fail("%s", redactErr(err, dsn)), false
	}
	if want != generatorNative {
		return p, exitOK, true
	}
	if err := native.CheckSuperuser(ctx, conn); errors.Is(err, native.ErrNotSuperuser) {
		p.close()
		return nil, c.fail("the native generator is not available to this role: creating a C function takes a superuser; nothing was changed (without --native, install keeps the SQL generator)"), false
	} else if err != nil {
		p.close()
		return nil, c.fail("%s", redactErr(err, dsn)), false
	}
	p.buildDir = nativeDir(dir, o.Layout.String())
	if p.library, err = native.Build(ctx, p.buildDir, o.Layout); err != nil {
		p.close()
		return nil, c.fail("the native generator is not available: %s: %v; nothing was changed (without --native, install keeps the SQL generator)", buildFailure(err), err), false
	}
	// The server must load it from there: try, before anything changes.
	if err := native.Load(ctx, conn, p.library); err != nil {
		p.close()
		return nil, c.fail("the native generator is not available: the database server cannot load %s: %s (is --native-dir on the server's machine, readable by its OS user?); nothing was changed",
			p.library, redactErr(err, dsn)), false
	}
	return p, exitOK, true
}

// finishGenerator gives the schema, now at the latest release, the
// generator the plan asks for, and says which it has.
func (c *cli) finishGenerator(ctx context.Context, p *generatorPlan, schema, dsn string) int {
	now, err := native.InstalledLibrary(ctx, p.conn, schema)
	if err != nil {
		return c.fail("%s", redactErr(err, dsn))
	}
	switch {
	case p.want == generatorNative:
		if err := native.Install(ctx, p.conn, schema, p.library); err != nil {
			return c.fail("the native generator could not be installed, and the SQL generator stays: %s", redactErr(err, dsn))
		}
		fmt.Fprintf(c.stdout, "snowflake_next_id() is the native generator (%s)\n", p.library)
	case p.want == generatorSQL && now != "":
		if err := native.Uninstall(ctx, p.conn, schema); err != nil {
			return c.fail("switch back to the SQL generator: %s", redactErr(err, dsn))
		}
		fmt.Fprintf(c.stdout, "snowflake_next_id() is the SQL generator again (it was %s's)\n", now)
	case p.want == generatorKeep && p.before != "" && now == "":
		// The upgrade put the SQL generator back: the native one again,
		// from the library it used.
		if err := native.Install(ctx, p.conn, schema, p.before); err != nil {
			return c.fail("the upgrade replaced the native generator by the SQL one, which stays: installing %s again failed: %s (install with --native to rebuild it, or --native=false to keep SQL)",
				p.before, redactErr(err, dsn))
		}
		fmt.Fprintf(c.stdout, "snowflake_next_id() is the native generator again (%s)\n", p.before)
	}
	return exitOK
}
