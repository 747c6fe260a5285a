package app

import (
	"errors"
	"log/slog"
	"path/filepath"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/snapshot"
	"github.com/engram-memory/engram/infra/textindex"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/projections"
)

// snapshotDir holds the embedded indexes' snapshots (docs/snapshots.md);
// "" (no data dir) keeps none.
func snapshotDir(dataDir string) string {
	if dataDir == "" {
		return ""
	}
	return filepath.Join(dataDir, "snapshots")
}

// snapshotVersions are the body format versions this build writes and
// reads, by index kind (the projection's name).
var snapshotVersions = map[string]uint32{
	projections.KeywordProjectionName: textindex.SnapshotVersion,
	projections.VectorsProjectionName: vectorindex.SnapshotVersion,
}

// olderSnapshotVersions are the older body format versions a kind's
// reader still reads: a vector image of format 1 (without its IDs in
// order) is read with its slot table rebuilt, so no stack refills its
// vector index, and its HNSW graph, for the change.
var olderSnapshotVersions = map[string][]uint32{
	projections.VectorsProjectionName: {1},
}

// openSnapshot opens the snapshot of kind in dir (trusting its stamp when
// stamped: snapshot.OpenStamped), or says why not in the log (a missing
// one at info: a first start; any other at warn).
func openSnapshot(dir, kind string, stamped bool, logger *slog.Logger) *snapshot.File {
	open := snapshot.Open
	if stamped {
		open = snapshot.OpenStamped
	}
	f, err := open(dir, kind, snapshotVersions[kind], olderSnapshotVersions[kind]...)
	switch {
	case errors.Is(err, snapshot.ErrMissing):
		logger.Info("no index snapshot: the index is filled from its state", "index", kind)
	case err != nil:
		logger.Warn("index snapshot not used: the index is filled from its state", "index", kind, "error", err)
	}
	return f
}

func tagOf(f *snapshot.File) *domain.IndexSnapshot {
	return &domain.IndexSnapshot{Checkpoint: f.Header.Checkpoint, EventID: f.Header.EventID}
}

// restoreKeyword returns the embedded keyword index restored from its
// snapshot in dir, the image's tag, and a release of the image, to call
// once the index is no longer used: the index reads its arrays in place
// from the mapped body. All nil when there is none usable.
func restoreKeyword(dir string, stamped bool, saturation float64, logger *slog.Logger) (*textindex.Port, *domain.IndexSnapshot, func()) {
	if dir == "" {
		return nil, nil, nil
	}
	opening := startStep()
	f := openSnapshot(dir, projections.KeywordProjectionName, stamped, logger)
	if f == nil {
		return nil, nil, nil
	}
	reading := startStep()
	p, err := textindex.ReadSnapshot(f.Body, textindex.Options{}, saturation)
	if err != nil {
		_ = f.Close()
		logger.Warn("index snapshot not used: the index is filled from its state", "index", projections.KeywordProjectionName, "error", err)
		return nil, nil, nil
	}
	logSnapshotRead(logger, projections.KeywordProjectionName, len(f.Body), opening, reading)
	return p, tagOf(f), func() { _ = f.Close() }
}

// restoreVectors returns the embedded vector index restored from its
// snapshot in dir, the image's tag, and a release of the image, to call
// after the index is closed: the index reads its big arrays in place from
// the mapped body. All nil when there is none usable.
func restoreVectors(dir string, stamped bool, opts vectorindex.Options, logger *slog.Logger) (*vectorindex.Port, *domain.IndexSnapshot, func()) {
	if dir == "" {
		return nil, nil, nil
	}
	opening := startStep()
	f := openSnapshot(dir, projections.VectorsProjectionName, stamped, logger)
	if f == nil {
		return nil, nil, nil
	}
	reading := startStep()
	p, err := vectorindex.ReadSnapshot(f.Body, opts)
	if err != nil {
		_ = f.Close()
		logger.Warn("index snapshot not used: the index is filled from its state", "index", projections.VectorsProjectionName, "error", err)
		return nil, nil, nil
	}
	logSnapshotRead(logger, projections.VectorsProjectionName, len(f.Body), opening, reading, "graph_unbuilt", p.ImageUnbuilt())
	return p, tagOf(f), func() { _ = f.Close() }
}

// logSnapshotRead says what restoring an index from its image cost: the
// open (mapping the file and checking its checksum, which reads every
// byte), then the read (mostly checking the arrays used in place), and
// what the index adds (attrs).
func logSnapshotRead(logger *slog.Logger, kind string, bytes int, opening, reading step, attrs ...any) {
	took, cpu := reading.since()
	all, allCPU := opening.since()
	logger.Info("index snapshot read", append([]any{"index", kind, "bytes", bytes, "took", took, "cpu", cpu,
		"open_took", all - took, "open_cpu", allCPU - cpu}, attrs...)...)
}

// useSnapshots gives the in-process index projections their snapshots:
// the image each was restored from, and where to save new ones. A
// read-only opener neither fills its indexes nor writes images.
func (s *Core) useSnapshots(dir string, ix *indexes, readOnly, finishGraphs bool) {
	if dir == "" || readOnly {
		return
	}
	files := snapshot.Dir{Path: dir, Versions: snapshotVersions}
	if err := snapshot.RemoveTemporary(dir); err != nil {
		s.Logger.Warn("snapshot temporary files of an interrupted write not removed", "error", err)
	}
	if ix.keywordInProcess {
		s.Keyword.UseSnapshots(projections.Snapshots{Files: files, Restored: ix.keywordRestored})
	}
	if ix.vectorsInProcess {
		s.Vectors.UseSnapshots(projections.Snapshots{Files: files, Restored: ix.vectorsRestored, FinishGraphs: finishGraphs})
	}
}
