package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/native"
)

const buildNativeHelp = `
sfgen build-native [--native-dir DIR] [--layout NAME|SPEC] [--pg-config PATH] [--json]

Builds the native (C) generator for a layout and prints the library's
path. It changes no database.

Without --native-dir it installs the library into the server's own
library directory ($libdir, pg_config --pkglibdir) as
sfgen_native_<layout hash>.so: the portable name, which 'sfgen install
--native' (without --native-dir) names, and which every server with the
file there finds, so that a dump, a standby or a copy of the database
runs its native generator on any server where this was run. Writing
$libdir usually takes root.

With --native-dir DIR it builds into DIR/sfgen-<layout hash>/ instead, the
path 'sfgen migration --native --native-dir DIR' names in the migration
it writes and 'sfgen install --native --native-dir DIR' builds and uses,
and puts a copy under the portable name in DIR, for a server whose
dynamic_library_path names DIR (dynamic_library_path = '$libdir:DIR' in
postgresql.conf; only a superuser can set it, and DIR must be writable by
no one the server should not trust).

Run it on every database server (primary, standbys, the target of a
restore), as a user who can write there, with the directory readable by
the server's OS user; and again after a major-version upgrade of the
server (pg_upgrade), before anything inserts: a library is built for one
major version. It needs that version's pg_config (--pg-config, else
$PG_CONFIG, else pg_config on PATH, else Debian's newest under
/usr/lib/postgresql), its server headers (Debian:
postgresql-server-dev-15), make and the C compiler pg_config names.
Running it again rebuilds the library there (for the pg_config it finds);
a server that has the old one loaded keeps it until its sessions end.

Examples:
  sfgen build-native
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
	dir := c.fs.String("native-dir", "", "absolute `DIR` to build the library under (default: into the server's $libdir, by its portable name)")
	pgConfig := c.fs.String("pg-config", "", "the server's pg_config `PATH` (default: $PG_CONFIG, else pg_config on PATH, else Debian's newest)")
	asJSON := c.fs.Bool("json", false, "print the library's path and layout as JSON")
	if code, done := c.parseFlags(args); done {
		return code
	}
	if *dir != "" && !filepath.IsAbs(*dir) {
		return c.usageError("--native-dir %q is not absolute: the database server loads the library by its full path", *dir)
	}
	var opts []native.BuildOption
	if *pgConfig != "" {
		opts = append(opts, native.WithPGConfig(*pgConfig))
	}
	into, buildDir := *dir, ""
	if into == "" {
		var err error
		if into, err = native.PkgLibDir(ctx, opts...); err != nil {
			return c.fail("the native generator was not built: %s: %v", install.BuildFailure(err), err)
		}
		tmp, err := os.MkdirTemp("", "sfgen-build-native-")
		if err != nil {
			return c.fail("%v", err)
		}
		defer os.RemoveAll(tmp)
		buildDir = tmp
	} else {
		buildDir = install.NativeDir(*dir, lf.layout.String())
	}
	lib, err := native.Build(ctx, buildDir, lf.layout, opts...)
	if err != nil {
		return c.fail("the native generator was not built: %s: %v", install.BuildFailure(err), err)
	}
	port, err := native.PortableLibrary(lib, into, lf.layout)
	if err != nil {
		return c.fail("the native generator was built, but not installed under its portable name: %v (run as a user who can write %s, as root for the server's $libdir, or give --native-dir DIR)", err, into)
	}
	if *dir == "" {
		lib = port
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Library  string `json:"library"`
			Portable string `json:"portable"`
			Layout   string `json:"layout"`
		}{lib, port, lf.layout.String()}); err != nil {
			return c.fail("%v", err)
		}
		return exitOK
	}
	fmt.Fprintln(stdout, lib)
	return exitOK
}
