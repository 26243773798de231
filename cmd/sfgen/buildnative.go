package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/native"
)

const buildNativeHelp = `
sfgen build-native --native-dir DIR [--layout NAME|SPEC] [--pg-config PATH] [--json]

Builds the native (C) generator for a layout into DIR/sfgen-<layout hash>/
and prints the library's path: the one 'sfgen migration --native
--native-dir DIR' names in the migration it writes, and the one 'sfgen
install --native --native-dir DIR' builds and uses. It changes no
database.

Run it on every database server a native migration is applied on, as a
user who can write DIR, with DIR readable by the server's OS user; and
again after a major-version upgrade of the server (pg_upgrade), before
anything inserts: a library is built for one major version. It needs that
version's pg_config (--pg-config, else $PG_CONFIG, else pg_config on
PATH, else Debian's newest under /usr/lib/postgresql), its server headers (Debian:
postgresql-server-dev-15), make and the C compiler pg_config names.
Running it again rebuilds the library there (for the pg_config it finds).

Examples:
  sfgen build-native --native-dir /usr/local/lib/sfgen
  sfgen build-native --native-dir /usr/local/lib/sfgen --layout discord --json
  sfgen build-native --native-dir /opt/sfgen --pg-config /usr/lib/postgresql/15/bin/pg_config
`

func runBuildNative(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("build-native", buildNativeHelp, stdout, stderr)
	lf, code, done := c.layoutVar(args)
	if done {
		return code
	}
	dir := c.fs.String("native-dir", "", "absolute `DIR` to build the library under (required)")
	pgConfig := c.fs.String("pg-config", "", "the server's pg_config `PATH` (default: $PG_CONFIG, else pg_config on PATH, else Debian's newest)")
	asJSON := c.fs.Bool("json", false, "print the library's path and layout as JSON")
	if code, done := c.parseFlags(args); done {
		return code
	}
	switch {
	case *dir == "":
		return c.usageError("missing --native-dir; name the absolute directory on this database server to build the library under")
	case !filepath.IsAbs(*dir):
		return c.usageError("--native-dir %q is not absolute: the database server loads the library by its full path", *dir)
	}
	var opts []native.BuildOption
	if *pgConfig != "" {
		opts = append(opts, native.WithPGConfig(*pgConfig))
	}
	lib, err := native.Build(ctx, install.NativeDir(*dir, lf.layout.String()), lf.layout, opts...)
	if err != nil {
		return c.fail("the native generator was not built: %s: %v", install.BuildFailure(err), err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Library string `json:"library"`
			Layout  string `json:"layout"`
		}{lib, lf.layout.String()}); err != nil {
			return c.fail("%v", err)
		}
		return exitOK
	}
	fmt.Fprintln(stdout, lib)
	return exitOK
}
