package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/native"
)

// nativeCheck says, on stderr, when schema's snowflake_next_id() is the
// native generator and this server cannot run it (native.Check: its C
// function missing, or its library not loadable here), with the commands
// that fix it, and then reports false. A failure to look is left to the
// command's own statements, which meet it too.
func (c *cli) nativeCheck(ctx context.Context, dsn, schema string) bool {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return true
	}
	defer conn.Close(context.Background())
	if _, err := native.Check(ctx, conn, schema); errors.Is(err, native.ErrCannotRun) {
		fmt.Fprintf(c.stderr, "sfgen %s: %v\n", c.name, err)
		return false
	}
	return true
}

// generatorFlags reads --native (unset: keep; =false: the SQL
// generator) and checks --native-dir against it; dirHelp says, in the
// error for a missing --native-dir, what the directory is for.
func (c *cli) generatorFlags(native bool, dir, dirHelp string) (want install.Choice, code int, ok bool) {
	want = install.Keep
	if c.flagSet("native") {
		want = install.SQL
		if native {
			want = install.Native
		}
	}
	switch {
	case want == install.Native && dir == "" && c.name != "install":
		// install --native alone uses the library the server finds by
		// its portable name ('sfgen build-native' puts it there).
		return want, c.usageError("--native needs --native-dir DIR: %s", dirHelp), false
	case want == install.Native && dir != "" && !filepath.IsAbs(dir):
		return want, c.usageError("--native-dir %q is not absolute: the database server loads the library by its full path", dir), false
	case want != install.Native && dir != "":
		return want, c.usageError("--native-dir goes with --native"), false
	}
	return want, exitOK, true
}
