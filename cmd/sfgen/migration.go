package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sfgen/sfgen/internal/migrationdir"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

const migrationHelp = `
sfgen migration --dir DIR [--sequential] [--schema NAME] [--datacenter N] [--machine N]

Writes sfgen's functions as a new goose migration into your application's
migrations directory and prints its path. The version is a UTC timestamp
(YYYYMMDDhhmmss), or with --sequential the next number after the highest
version in DIR. The file is written whole or not at all and never replaces
an existing file; a directory that already has an sfgen migration is
refused.

Examples:
  sfgen migration --dir db/migrations
  sfgen migration --dir db/migrations --sequential --schema ids
`

func runMigration(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("migration", migrationHelp, stdout, stderr)
	var sf sqlFlags
	sf.register(c)
	dir := c.fs.String("dir", "", "goose migrations `DIR` to write into (required)")
	sequential := c.fs.Bool("sequential", false, "number the migration after the highest version in DIR instead of by time")
	if code, done := c.parseFlags(args); done {
		return code
	}
	if *dir == "" {
		return c.usageError("missing --dir; name your goose migrations directory")
	}
	o, err := sf.options()
	if err != nil {
		return c.usageError("%v", err)
	}
	content, err := sqlgen.Migration(o)
	if err != nil {
		return c.usageError("%v", err)
	}
	v := migrationdir.Timestamp
	if *sequential {
		v = migrationdir.Sequential
	}
	path, err := migrationdir.Write(*dir, content, v, time.Now())
	if errors.Is(err, migrationdir.ErrNotDir) || errors.Is(err, migrationdir.ErrExists) {
		return c.usageError("%v", err)
	}
	if err != nil {
		return c.fail("%v", err)
	}
	fmt.Fprintln(stdout, path)
	return exitOK
}
