package main

import (
	"os"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// TestMain stops the shared throwaway PostgreSQL that pgtest.DSN starts.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
