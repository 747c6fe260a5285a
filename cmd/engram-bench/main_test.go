package main

import (
	"os"
	"testing"

	"github.com/engram-memory/engram/internal/pgtest"
)

// pg is the PostgreSQL the replay from a PostgreSQL log runs against:
// ENGRAM_TEST_POSTGRES_URL or a throwaway cluster TestMain starts.
var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }
