package sqlite

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// FloorStep is one step of StorageFloor: a read-model table copied, or
// the deferred indexes built.
type FloorStep struct {
	// Table is the table copied, or DeferredIndexesStep.
	Table string
	Rows  int64
	// Wall is the step's wall time; CPU the process's CPU time during it
	// (by the caller's clock, zero without one).
	Wall, CPU time.Duration
}

// StorageFloor measures what an offline rebuild of the database at
// srcPath costs SQLite itself, with nothing of the replay around it: into
// a fresh database in dir (migrated, with the rebuild's query-only indexes
// deferred as RebuildOffline defers them) every read-model table of
// srcPath is copied by one INSERT … SELECT inside SQLite — no statement
// per row, no values crossing into Go, no decoding, rows in key order —
// then the deferred indexes are built. No replay that writes these rows
// through this SQLite can take less; `engram-bench replay --floor`
// reports it next to the rebuild. dir must be empty; the log is not
// copied. cpu, when not nil, reads the process's CPU time.
func StorageFloor(ctx context.Context, dir, srcPath string, cpu func() time.Duration) ([]FloorStep, error) {
	if cpu == nil {
		cpu = func() time.Duration { return 0 }
	}
	db, err := Open(ctx, dir, Options{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	byName := readModelTables()
	projections := make([]string, 0, len(byName))
	for name := range byName {
		projections = append(projections, name)
	}
	slices.Sort(projections)
	if err := db.DeferIndexes(ctx, projections); err != nil {
		return nil, err
	}
	// ATTACH holds for one connection and cannot run in a transaction:
	// the copies run on the writer's connection itself, each statement
	// its own transaction.
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: floor: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS src`, "file:"+srcPath+"?mode=ro"); err != nil {
		return nil, fmt.Errorf("sqlite: floor: attach %s: %w", srcPath, err)
	}
	var steps []FloorStep
	for _, p := range projections {
		for _, table := range tableNames(byName[p]) {
			// Generated columns are computed, not copied.
			var columns string
			if err := conn.QueryRowContext(ctx, `SELECT group_concat('"' || name || '"', ', ') FROM pragma_table_xinfo(?) WHERE hidden = 0`, table).Scan(&columns); err != nil {
				return nil, fmt.Errorf("sqlite: floor: columns of %s: %w", table, err)
			}
			start, cpuStart := time.Now(), cpu()
			res, err := conn.ExecContext(ctx, `INSERT INTO main.`+table+` (`+columns+`) SELECT `+columns+` FROM src.`+table)
			if err != nil {
				return nil, fmt.Errorf("sqlite: floor: copy %s: %w", table, err)
			}
			step := FloorStep{Table: table, Wall: time.Since(start), CPU: cpu() - cpuStart}
			if step.Rows, err = res.RowsAffected(); err != nil {
				return nil, fmt.Errorf("sqlite: floor: copy %s: %w", table, err)
			}
			steps = append(steps, step)
		}
	}
	if _, err := conn.ExecContext(ctx, `DETACH DATABASE src`); err != nil {
		return nil, fmt.Errorf("sqlite: floor: detach: %w", err)
	}
	if err := conn.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: floor: %w", err)
	}
	start, cpuStart := time.Now(), cpu()
	if err := db.RestoreIndexes(ctx); err != nil {
		return nil, err
	}
	return append(steps, FloorStep{Table: DeferredIndexesStep, Wall: time.Since(start), CPU: cpu() - cpuStart}), nil
}

// DeferredIndexesStep is the Table of StorageFloor's last step.
const DeferredIndexesStep = "deferred indexes"
