package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sfgen/sfgen/internal/catalog"
)

// installedElsewhere says, for a command pointed at schema where sfgen is
// not installed, where it is: "it is in schema ids: give --schema ids",
// with ok set. ok is false when schema itself holds sfgen, when no other
// schema the role may use does, or when they cannot be read: then the
// command's own message stands.
func installedElsewhere(ctx context.Context, q catalog.Querier, schema string) (fix string, ok bool) {
	found, err := catalog.SchemasWithSfgen(ctx, q)
	if err != nil || slices.Contains(found, schema) {
		return "", false
	}
	var others []string
	for _, s := range found {
		if _, err := catalog.ParseSchema(s); err == nil { // one --schema can name
			others = append(others, s)
		}
	}
	switch len(others) {
	case 0:
		return "", false
	case 1:
		return fmt.Sprintf("it is in schema %s: give --schema %s", others[0], others[0]), true
	}
	return fmt.Sprintf("it is in schemas %s: give --schema with one of them", strings.Join(others, ", ")), true
}

// notInstalledFix is what to do when sfgen is not installed in schema:
// installedElsewhere's --schema, or "run 'sfgen install' first".
func notInstalledFix(ctx context.Context, q catalog.Querier, schema string) string {
	if fix, ok := installedElsewhere(ctx, q, schema); ok {
		return fix
	}
	return "run 'sfgen install' first"
}
