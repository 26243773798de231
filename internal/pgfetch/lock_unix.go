//go:build unix

package pgfetch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockDir takes an exclusive lock on dir's lock file, waiting while
// another process holds it until ctx ends, and returns its release.
func lockDir(ctx context.Context, dir string) (func(), error) {
	name := filepath.Join(dir, ".lock")
	fh, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(fh.Fd()), syscall.LOCK_UN); fh.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			fh.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			fh.Close()
			return nil, fmt.Errorf("another process held %s until the deadline: %w", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
