package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/engram-memory/engram/internal/pgtest"
)

// pg is the PostgreSQL the replay from a PostgreSQL log runs against:
// ENGRAM_TEST_POSTGRES_URL or a throwaway cluster TestMain starts.
var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	var err error
	if pg, err = pgtest.Open(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := pg.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	return m.Run()
}
