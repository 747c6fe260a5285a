//go:build linux

package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/diskspace"
	"github.com/engram-memory/engram/infra/postgres"
	"github.com/engram-memory/engram/internal/pgtest"
	"github.com/engram-memory/engram/internal/tmpfstest"
)

// TestFullPostgreSQLDiskIsJudgedByPostgreSQL: the log's tables live on a
// small tmpfs of their own (a tablespace), which is filled, while the data
// dir has plenty of room. The append that finds no space marks storage
// full; storage stays full while PostgreSQL's disk is full, whatever the
// data dir's free space says, and has room again, without a restart, as
// soon as space is freed there.
func TestFullPostgreSQLDiskIsJudgedByPostgreSQL(t *testing.T) {
	if os.Getenv(pgtest.URLEnv) != "" {
		t.Skipf("%s names a server whose disk this test cannot fill; it runs on the cluster pgtest starts", pgtest.URLEnv)
	}
	ctx := context.Background()
	space := tmpfstest.Mount(t, 8<<20)
	owner, err := user.Lookup("postgres")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(owner.Uid)
	gid, _ := strconv.Atoi(owner.Gid)
	// The server runs as postgres: it must reach the tablespace.
	for _, dir := range []string{filepath.Dir(space), space} {
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	tsDir := filepath.Join(space, "ts")
	if err := os.Mkdir(tsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tsDir, uid, gid); err != nil {
		t.Fatal(err)
	}
	base := pg.URL(t)
	name := fmt.Sprintf("engram_full_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	for _, stmt := range []string{
		fmt.Sprintf(`CREATE TABLESPACE %s LOCATION '%s'`, name, tsDir),
		fmt.Sprintf(`CREATE DATABASE %s TABLESPACE %s`, name, name),
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	db, err := postgres.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		for _, stmt := range []string{`DROP DATABASE ` + name + ` WITH (FORCE)`, `DROP TABLESPACE ` + name} {
			if _, err := admin.Exec(context.Background(), stmt); err != nil {
				t.Error(err)
			}
		}
	})
	guard := diskspace.New(diskspace.Options{Dir: t.TempDir(), Remote: &diskspace.Remote{Name: "PostgreSQL", IsFull: postgres.IsStorageFull, HasRoom: db.ProbeSpace}})
	store := guard.Appends(postgres.NewEventStore(db, 50*time.Millisecond))
	filler := filepath.Join(space, "filler")
	tmpfstest.Fill(t, filler)

	payload := []byte(`{"filler":"` + strings.Repeat("x", 64<<10) + `"}`)
	var refused error
	for i := 0; i < 200 && refused == nil; i++ {
		_, refused = store.Append(ctx, "full-1", domain.ExpectAny, []domain.NewEvent{{Type: "T", SchemaVersion: 1, Payload: payload}})
	}
	if !errors.Is(refused, domain.ErrStorageFull) {
		t.Fatalf("appends to a full PostgreSQL disk: %v, want storage full", refused)
	}
	// The data dir has room: only PostgreSQL may say when storage has.
	for deadline := time.Now().Add(3 * diskspace.ProbeInterval); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if guard.Full(ctx) == nil {
			t.Fatal("storage was reported as having room while PostgreSQL's disk was still full")
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := guard.WaitForSpace(waitCtx); err != nil {
		t.Fatalf("storage did not have room again once PostgreSQL's disk had: %v", err)
	}
	if _, err := store.Append(ctx, "full-1", domain.ExpectAny, []domain.NewEvent{{Type: "T", SchemaVersion: 1, Payload: []byte(`{}`)}}); err != nil {
		t.Fatalf("append once space was freed: %v", err)
	}
}
