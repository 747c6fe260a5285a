package snapshot

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"testing"
)

// OpenStamped reads no byte of a stamped body: a body damaged under a
// stamp that names the file as it now is (what silent damage of the
// medium would leave, the one change a stamp cannot see) is opened
// unchecked, where Open refuses it.
func TestOpenStampedTrustsAStampThatNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, Header{Kind: "vectors", Version: 2}, func(w io.Writer) error {
		_, err := w.Write(bytes.Repeat([]byte("vectors "), 1000))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	written := readStamp(dir, "vectors")
	f, err := os.OpenFile(Path(dir, "vectors"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{'X'}, 200); err != nil {
		t.Fatal(err)
	}
	id, err := identity(f)
	f.Close()
	if err != nil || id == (fileID{}) {
		t.Fatalf("no identity: %v", err)
	}
	writeStamp(dir, "vectors", stamp{file: id, crc: written.crc})
	if _, err := Open(dir, "vectors", 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
	writeStamp(dir, "vectors", stamp{file: id, crc: written.crc}) // Open left it: it stamps only what it checked
	opened, err := OpenStamped(dir, "vectors", 2)
	if err != nil {
		t.Fatalf("OpenStamped checksummed a stamped body: %v", err)
	}
	opened.Close()
}

// A stamp's checksum, computed a bit at a time, is the CRC-32C the
// standard library computes: stamps written before it read as before.
func TestStampChecksumIsCRC32C(t *testing.T) {
	b := make([]byte, 80)
	for i := range b {
		b[i] = byte(i*131 + 7)
	}
	for n := range len(b) + 1 {
		if got, want := stampChecksum(b[:n]), crc32.Checksum(b[:n], crc32.MakeTable(crc32.Castagnoli)); got != want {
			t.Fatalf("%d bytes: %08x, want %08x", n, got, want)
		}
	}
}
