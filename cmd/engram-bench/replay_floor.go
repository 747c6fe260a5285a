package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/engram-memory/engram/infra/sqlite"
)

// replayFloor is what the rebuilt read models cost SQLite alone
// (sqlite.StorageFloor): no replay writing the same rows through the same
// SQLite can be faster, so EventsPerSecond (per CPU second of that one
// writer) is the ceiling of any replay of this log into these read
// models on this machine.
type replayFloor struct {
	floorTable
	EventsPerSecond float64      `json:"events_per_second"`
	Steps           []floorTable `json:"steps"`
}

type floorTable struct {
	Table      string  `json:"table,omitempty"`
	Rows       int64   `json:"rows,omitempty"`
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpu_seconds"`
}

// measureFloor copies the read models of the SQLite database at dbPath
// into a scratch database beside its data dir (the same file system) and
// removes the scratch database afterwards.
func measureFloor(ctx context.Context, dbPath string, events uint64) (*replayFloor, error) {
	scratch, err := os.MkdirTemp(filepath.Dir(filepath.Dir(dbPath)), ".engram-bench-floor-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	steps, err := sqlite.StorageFloor(ctx, scratch, dbPath, selfCPU)
	if err != nil {
		return nil, err
	}
	f := &replayFloor{}
	for _, s := range steps {
		f.Steps = append(f.Steps, floorTable{Table: s.Table, Rows: s.Rows, Seconds: s.Wall.Seconds(), CPUSeconds: s.CPU.Seconds()})
		f.Seconds += s.Wall.Seconds()
		f.CPUSeconds += s.CPU.Seconds()
	}
	// SQLite runs the steps on one goroutine: their CPU time is the wall
	// time a free core would take, whatever the load. Opening, migrating
	// and closing the scratch database are no part of a rebuild.
	f.EventsPerSecond = float64(events) / f.CPUSeconds
	return f, nil
}

// line is the floor in the report's table.
func (f *replayFloor) line() string {
	var parts []string
	for _, s := range f.Steps {
		if s.Rows > 0 || s.Table == sqlite.DeferredIndexesStep {
			parts = append(parts, fmt.Sprintf("%s %.2f", s.Table, s.CPUSeconds))
		}
	}
	return fmt.Sprintf("storage floor (the rebuilt read models copied table by table inside SQLite, then the deferred indexes built): %.2f s, %.2f CPU s = at most %.0f events/s (CPU s: %s)\n",
		f.Seconds, f.CPUSeconds, f.EventsPerSecond, strings.Join(parts, ", "))
}
