package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/engram-memory/engram/infra/snapshot"
)

func writeImage(t *testing.T, dir string, h snapshot.Header, body []byte) {
	t.Helper()
	if err := snapshot.Write(dir, h, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		t.Fatal(err)
	}
}

func TestWriteThenOpenReturnsTheImage(t *testing.T) {
	dir := t.TempDir()
	h := snapshot.Header{Kind: "keyword", Version: 3, Checkpoint: 42, EventID: "01HZZ"}
	body := bytes.Repeat([]byte("image "), 100_000)
	writeImage(t, dir, h, body)
	f, err := snapshot.Open(dir, "keyword", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Header != h {
		t.Errorf("header %+v, want %+v", f.Header, h)
	}
	if !bytes.Equal(f.Body, body) {
		t.Error("body differs")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("dir holds %d files, want the snapshot and its stamp alone (no temporary file left)", len(entries))
	}
}

// OpenStamped does not checksum a body checksummed whole before (by its
// Write, or an Open since) that has not changed since: it trusts the
// file's stamp. A file changed in any way through the file system is
// checksummed again, and refused when damaged; so is one without a stamp.
func TestOpenStampedChecksumsOnlyAChangedFile(t *testing.T) {
	dir := t.TempDir()
	h := snapshot.Header{Kind: "vectors", Version: 2}
	writeImage(t, dir, h, bytes.Repeat([]byte("vectors "), 10_000))
	path, stamp := snapshot.Path(dir, "vectors"), filepath.Join(dir, "vectors.verified")
	f, err := snapshot.OpenStamped(dir, "vectors", 2)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	stamped, err := os.ReadFile(stamp)
	if err != nil {
		t.Fatal(err)
	}

	// A byte of the body damaged in place, after the file system's
	// timestamp tick (a few ms): the stamp no longer names the file.
	time.Sleep(20 * time.Millisecond)
	damage := func(b byte) {
		w, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteAt([]byte{b}, 200); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	damage('X')
	if _, err := snapshot.OpenStamped(dir, "vectors", 2); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("OpenStamped of a damaged file: %v, want ErrCorrupt", err)
	}
	if err := os.Remove(stamp); err != nil {
		t.Fatal(err)
	}
	// Without a stamp: OpenStamped checksums, refuses, stamps nothing.
	if _, err := snapshot.OpenStamped(dir, "vectors", 2); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("OpenStamped of a damaged file without a stamp: %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(stamp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a damaged file was stamped (%v)", err)
	}
	damage('v') // repaired: checksummed by Open, which stamps it
	if f, err = snapshot.Open(dir, "vectors", 2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if now, err := os.ReadFile(stamp); err != nil || bytes.Equal(now, stamped) {
		t.Fatalf("the repaired file's stamp: %v, same as the first file's: %v", err, bytes.Equal(now, stamped))
	}
	if f, err = snapshot.OpenStamped(dir, "vectors", 2); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestBodyStartsAligned: whatever the lengths of the kind and the event
// id, the body starts at a multiple of snapshot.BodyAlign in the file, so a
// mapped body is aligned and an index can use its arrays in place.
func TestBodyStartsAligned(t *testing.T) {
	body := []byte("aligned body")
	for _, eventID := range []string{"", "e", "01HZZ", "0192f5c4-1d2e-7a3b-8c4d-5e6f7a8b9c0d", strings.Repeat("x", 64), strings.Repeat("y", 250)} {
		for _, kind := range []string{"keyword", "vectors", "k"} {
			dir := t.TempDir()
			writeImage(t, dir, snapshot.Header{Kind: kind, Version: 1, Checkpoint: 7, EventID: eventID}, body)
			data, err := os.ReadFile(snapshot.Path(dir, kind))
			if err != nil {
				t.Fatal(err)
			}
			if off := len(data) - len(body); off%snapshot.BodyAlign != 0 {
				t.Errorf("kind %q, event id of %d bytes: body at file offset %d, not a multiple of %d", kind, len(eventID), off, snapshot.BodyAlign)
			}
			f, err := snapshot.Open(dir, kind, 1)
			if err != nil {
				t.Fatal(err)
			}
			if addr := uintptr(unsafe.Pointer(&f.Body[0])); addr%8 != 0 {
				t.Errorf("kind %q, event id of %d bytes: opened body at address %#x, not 8-byte aligned", kind, len(eventID), addr)
			}
			if string(f.Body) != string(body) {
				t.Errorf("body %q, want %q", f.Body, body)
			}
			f.Close()
		}
	}
}

// unpadded rewrites a file in format 1's layout: the same header without
// the padding before the body.
func unpadded(d []byte) []byte {
	const fixedEnd = 8 + 4 + 4 + 8 + 8 + 4 + 2 + 2 // magic and the fixed fields
	kindLen := int(binary.LittleEndian.Uint16(d[fixedEnd-4:]))
	idLen := int(binary.LittleEndian.Uint16(d[fixedEnd-2:]))
	strEnd := fixedEnd + kindLen + idLen
	pad := (snapshot.BodyAlign - strEnd%snapshot.BodyAlign) % snapshot.BodyAlign
	out := append([]byte(nil), d[:strEnd]...)
	binary.LittleEndian.PutUint32(out[8:], 1)
	return append(out, d[strEnd+pad:]...)
}

func TestWriteReplacesAndAFailedWriteKeepsTheOld(t *testing.T) {
	dir := t.TempDir()
	writeImage(t, dir, snapshot.Header{Kind: "vectors", Version: 1, Checkpoint: 1}, []byte("old"))
	writeImage(t, dir, snapshot.Header{Kind: "vectors", Version: 1, Checkpoint: 2}, []byte("new"))
	failed := errors.New("index closed")
	err := snapshot.Write(dir, snapshot.Header{Kind: "vectors", Version: 1, Checkpoint: 3}, func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("Write = %v, want the body's error", err)
	}
	f, err := snapshot.Open(dir, "vectors", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Header.Checkpoint != 2 || string(f.Body) != "new" {
		t.Errorf("after a failed write: checkpoint %d body %q, want 2 %q", f.Header.Checkpoint, f.Body, "new")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("dir holds %d files after a failed write, want the snapshot and its stamp", len(entries))
	}
}

func TestOpenRefusesBadFiles(t *testing.T) {
	good := func(t *testing.T, dir string) []byte {
		writeImage(t, dir, snapshot.Header{Kind: "keyword", Version: 2, Checkpoint: 9, EventID: "e9"}, []byte("the image body"))
		data, err := os.ReadFile(snapshot.Path(dir, "keyword"))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	tests := []struct {
		name    string
		damage  func(data []byte) []byte // nil: remove the file
		kind    string
		version uint32
		want    error
	}{
		{name: "missing", kind: "keyword", version: 2, want: snapshot.ErrMissing},
		{name: "empty file", damage: func([]byte) []byte { return nil }, kind: "keyword", version: 2, want: snapshot.ErrCorrupt},
		{name: "not a snapshot", damage: func([]byte) []byte { return []byte("SQLite format 3\x00 and more bytes than a header holds ....") }, kind: "keyword", version: 2, want: snapshot.ErrCorrupt},
		{name: "truncated header", damage: func(d []byte) []byte { return d[:20] }, kind: "keyword", version: 2, want: snapshot.ErrCorrupt},
		{name: "truncated body", damage: func(d []byte) []byte { return d[:len(d)-3] }, kind: "keyword", version: 2, want: snapshot.ErrCorrupt},
		{name: "trailing bytes", damage: func(d []byte) []byte { return append(d, 0) }, kind: "keyword", version: 2, want: snapshot.ErrCorrupt},
		{name: "flipped body bit", damage: func(d []byte) []byte { d[len(d)-1] ^= 1; return d }, kind: "keyword", version: 2, want: snapshot.ErrCorrupt},
		{name: "other file format", damage: func(d []byte) []byte { d[8]++; return d }, kind: "keyword", version: 2, want: snapshot.ErrVersion},
		{name: "damaged header padding", damage: func(d []byte) []byte { d[len(d)-len("the image body")-1] = 1; return d }, kind: "keyword", version: 2, want: snapshot.ErrCorrupt},
		{name: "file format 1 (no padding before the body)", damage: func(d []byte) []byte { return unpadded(d) }, kind: "keyword", version: 2, want: snapshot.ErrVersion},
		{name: "other body version", kind: "keyword", version: 3, want: snapshot.ErrVersion},
		{name: "other kind", kind: "vectors", version: 2, want: snapshot.ErrKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			data := good(t, dir)
			path := snapshot.Path(dir, "keyword")
			switch {
			case tt.name == "missing":
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			case tt.damage != nil:
				if err := os.WriteFile(path, tt.damage(data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.kind != "keyword" { // another kind's file of the same name
				if err := os.Rename(path, snapshot.Path(dir, tt.kind)); err != nil {
					t.Fatal(err)
				}
			}
			f, err := snapshot.Open(dir, tt.kind, tt.version)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open = %v, want %v", err, tt.want)
			}
			if f != nil {
				t.Error("a refused snapshot returned a file")
			}
		})
	}
}

// An older body version the caller still reads opens, with its version in
// the header; a version neither current nor among the older is refused.
func TestOpenTakesTheOlderVersionsItIsGiven(t *testing.T) {
	dir := t.TempDir()
	writeImage(t, dir, snapshot.Header{Kind: "vectors", Version: 1, Checkpoint: 4, EventID: "e4"}, []byte("format one"))
	f, err := snapshot.Open(dir, "vectors", 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Version != 1 || string(f.Body) != "format one" {
		t.Errorf("opened version %d body %q", f.Header.Version, f.Body)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Open(dir, "vectors", 3, 2); !errors.Is(err, snapshot.ErrVersion) {
		t.Errorf("Open(3, older 2) = %v, want ErrVersion", err)
	}
}

func TestWriteRefusesAnInvalidKind(t *testing.T) {
	for _, kind := range []string{"", "../escape", `a\b`} {
		err := snapshot.Write(t.TempDir(), snapshot.Header{Kind: kind}, func(io.Writer) error { return nil })
		if err == nil {
			t.Errorf("Write(kind %q) succeeded", kind)
		}
	}
	if _, err := os.Stat(filepath.Join(t.TempDir(), ".snap")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a file was written")
	}
}

func TestRemoveAndRemoveTemporary(t *testing.T) {
	dir := t.TempDir()
	writeImage(t, dir, snapshot.Header{Kind: "keyword", Version: 1}, []byte("kept"))
	writeImage(t, dir, snapshot.Header{Kind: "vectors", Version: 1}, []byte("removed"))
	for _, torn := range []string{".vectors.snap.tmp-123", ".vectors.verified.tmp-456"} {
		if err := os.WriteFile(filepath.Join(dir, torn), []byte("half an image or stamp"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := snapshot.RemoveTemporary(dir); err != nil {
		t.Fatal(err)
	}
	if err := snapshot.Remove(dir, "vectors"); err != nil {
		t.Fatal(err)
	}
	if err := snapshot.Remove(dir, "vectors"); err != nil {
		t.Fatalf("removing a missing snapshot: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 || entries[0].Name() != "keyword.snap" || entries[1].Name() != "keyword.verified" {
		t.Fatalf("dir holds %v, want keyword.snap and its stamp alone", entries)
	}
}
