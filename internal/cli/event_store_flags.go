package cli

import (
	"errors"
	"flag"
	"net/url"
	"os"
	"strings"

	"github.com/engram-memory/engram/internal/app"
)

// eventStoreFlags registers the event log flags, which `serve` and
// `projections` share (a rebuild must read the log the server uses).
func eventStoreFlags(fs *flag.FlagSet, es *app.EventStore) {
	fs.StringVar(&es.Backend, "event-store", app.SQLiteLog, "event log: sqlite (embedded, in the data dir), postgres or kurrentdb (shared by several nodes; each node keeps its read models in its own data dir)")
	fs.StringVar(&es.URL, "event-store-url", "", "URL of a remote event log, e.g. postgres://engram@db:5432/engram or kurrentdb://db:2113; a password belongs in ENGRAM_EVENT_STORE_URL or PGPASSWORD (PostgreSQL), ENGRAM_KURRENTDB_USERNAME and ENGRAM_KURRENTDB_PASSWORD (KurrentDB), never on the command line")
	fs.IntVar(&es.KurrentMaxAppendSize, "kurrentdb-max-append-size", 0, "largest append the KurrentDB server takes, in bytes (its MaxAppendSize); 0 means 1 MiB, the limit of KurrentDB 24.10 and 25.0 — raise it for 25.1 and later. Larger appends are split where atomicity is not promised (embedding vectors) and refused whole where it is (memory batches, sync pushes)")
}

// readModelFlags registers the read-model flags, which `serve` and
// `projections` share (a rebuild must write the read models the server
// reads).
func readModelFlags(fs *flag.FlagSet, rm *app.ReadModels) {
	fs.StringVar(&rm.Backend, "read-models", app.SQLiteReadModels, "where the read models live: sqlite (in the data dir, one replica per node) or postgres (one copy that every node of a shared event store reads and feeds)")
	fs.StringVar(&rm.URL, "postgres-url", "", "URL of the PostgreSQL database of --read-models postgres (default with --event-store postgres: the event store's database); a password belongs in ENGRAM_POSTGRES_URL or PGPASSWORD, never on the command line")
}

// readEventStoreCredentials takes the KurrentDB credentials from the
// environment only: a kurrentdb:// URL with credentials is refused.
func readEventStoreCredentials(es *app.EventStore) {
	es.KurrentUsername = os.Getenv("ENGRAM_KURRENTDB_USERNAME")
	es.KurrentPassword = os.Getenv("ENGRAM_KURRENTDB_PASSWORD")
}

// checkEventStoreSecret refuses a password in --event-store-url given on
// the command line, where every process listing and shell history shows it.
// The same URL in ENGRAM_EVENT_STORE_URL is fine.
// (fs.Visit cannot tell: parseFlags sets the environment twins too.)
func checkEventStoreSecret(args []string, es app.EventStore) error {
	onCommandLine := givenOnCommandLine(args, "event-store-url")
	if onCommandLine && urlHasPassword(es.URL) && es.Backend == app.KurrentLog {
		return errors.New("--event-store-url carries a password on the command line; KurrentDB credentials belong in ENGRAM_KURRENTDB_USERNAME and ENGRAM_KURRENTDB_PASSWORD")
	}
	if onCommandLine && urlHasPassword(es.URL) {
		return errors.New("--event-store-url carries a password on the command line; pass the URL in ENGRAM_EVENT_STORE_URL, or the password in PGPASSWORD (or ~/.pgpass)")
	}
	return nil
}

// checkReadModelsSecret refuses a password in --postgres-url given on the
// command line, as checkEventStoreSecret does for --event-store-url.
func checkReadModelsSecret(args []string, rm app.ReadModels) error {
	if givenOnCommandLine(args, "postgres-url") && urlHasPassword(rm.URL) {
		return errors.New("--postgres-url carries a password on the command line; pass the URL in ENGRAM_POSTGRES_URL, or the password in PGPASSWORD (or ~/.pgpass)")
	}
	return nil
}

// givenOnCommandLine reports whether args set the flag name.
func givenOnCommandLine(args []string, name string) bool {
	for _, arg := range args {
		given, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if strings.HasPrefix(arg, "-") && given == name {
			return true
		}
	}
	return false
}

// urlHasPassword reports whether a postgres:// URL or key=value DSN holds
// a password.
func urlHasPassword(raw string) bool {
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" {
		_, set := u.User.Password()
		return set || u.Query().Has("password")
	}
	for _, field := range strings.Fields(raw) {
		if strings.HasPrefix(strings.ToLower(field), "password=") {
			return true
		}
	}
	return false
}
