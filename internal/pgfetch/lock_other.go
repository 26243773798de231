//go:build !unix

package pgfetch

import "context"

// lockDir does nothing here: processes fetching at once each download,
// and the rename into place keeps the cache whole.
func lockDir(context.Context, string) (func(), error) { return func() {}, nil }
