// Package native holds the C sources of sfgen's native
// snowflake_next_id(), a PostgreSQL extension built with PGXS (see
// src/Makefile). internal/native renders the layout's header, writes
// these sources next to it and builds them.
package native

import "embed"

// Sources are src/Makefile and src/sfgen_native.c. (src/sfgen_layout.h,
// the Twitter layout's header, is there for a build by hand; a build for
// another layout renders its own.)
//
//go:embed src/Makefile src/sfgen_native.c
var Sources embed.FS
