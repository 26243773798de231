package migrationdir

import (
	"bytes"
	"fmt"
	"strings"
)

// A Format is the file layout of a migration tool.
type Format string

// The formats sfgen writes.
const (
	// Goose is pressly/goose's: one file, NNNNN_name.sql, with
	// "-- +goose Up" and "-- +goose Down" sections, each run in a
	// transaction goose opens.
	Goose Format = "goose"
	// GolangMigrate is golang-migrate's: a pair, N_name.up.sql and
	// N_name.down.sql, each run as one query (PostgreSQL runs the
	// statements of one query in one transaction).
	GolangMigrate Format = "golang-migrate"
	// Dbmate is dbmate's: one file, N_name.sql, with "-- migrate:up" and
	// "-- migrate:down" sections, each run in a transaction dbmate opens.
	Dbmate Format = "dbmate"
	// Tern is tern's: one file, NNN_name.sql, whose up and down SQL the
	// line "---- create above / drop below ----" divides, each run in a
	// transaction tern opens. Tern wants versions 1, 2, 3, ...
	Tern Format = "tern"
)

// Formats are the formats sfgen writes, the default first.
var Formats = []Format{Goose, GolangMigrate, Dbmate, Tern}

// ternSeparator divides a tern migration's up and down SQL.
const ternSeparator = "---- create above / drop below ----"

// ParseFormat returns the format a --format flag names.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown migration format %q; want one of %s", s, strings.Join(names, ", "))
}

// A File is one file of a migration: the end of its name after the
// version, and its content.
type File struct {
	Suffix  string
	Content []byte
}

// Width is the fewest digits of f's sequential versions, as the tool's
// own "create" command writes them: goose -s 5, migrate create -seq 6,
// tern new 3 (dbmate numbers by time; 5 when asked to count).
func (f Format) Width() int {
	switch f {
	case GolangMigrate:
		return 6
	case Tern:
		return 3
	}
	return 5
}

// SequentialOnly says f's tool needs versions 1, 2, 3, ... with no gaps
// (tern), so timestamps will not do.
func (f Format) SequentialOnly() bool { return f == Tern }

// Files lays out a migration named name (sfgen_snowflake,
// sfgen_release_8) in f, for any format but Goose, whose files sqlgen
// renders whole: header is the comment block every file of sfgen's
// begins with, up and down the SQL of each direction, which carry no
// transaction control (each tool here runs a direction in one
// transaction).
func (f Format) Files(name string, header, up, down []byte) ([]File, error) {
	join := func(parts ...string) []byte {
		var b bytes.Buffer
		for i, p := range parts {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(strings.TrimRight(p, "\n") + "\n")
		}
		return b.Bytes()
	}
	h, u, d := string(header), string(up), string(down)
	switch f {
	case GolangMigrate:
		note := "--\n-- golang-migrate runs this file as one query, which PostgreSQL runs in one\n-- transaction: keep x-multi-statement off for it (split, it refuses)."
		return []File{
			{"_" + name + ".up.sql", join(h+note, u)},
			{"_" + name + ".down.sql", join(h+note, d)},
		}, nil
	case Dbmate:
		return []File{{"_" + name + ".sql", join(h, "-- migrate:up", u, "-- migrate:down", d)}}, nil
	case Tern:
		return []File{{"_" + name + ".sql", join(h, u, ternSeparator, d)}}, nil
	}
	return nil, fmt.Errorf("format %s: sfgen renders its files whole", f)
}
