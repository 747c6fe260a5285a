// Package snapshot stores an in-process index's image in a file of the data
// directory, so that a start loads the image instead of refilling the index
// from its projection's state (docs/snapshots.md).
//
// A file is a header and a body. The header names the index kind and the
// body's format version, the projection checkpoint the image reflects with
// the id of the log event at that position (so an image of another log is
// never taken for this one's), the body's length and its CRC-32C. A file is
// written to a temporary file in the same directory, synced, renamed over
// the old one and the directory synced: a crash at any moment leaves the
// old file or the new one, never a torn one; a torn or damaged file is
// still refused by the checksum.
package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/engram-memory/engram/domain"
)

// Errors of Open; a caller falls back to a refill on any of them and logs
// why.
var (
	// ErrMissing: there is no snapshot (it wraps fs.ErrNotExist too).
	ErrMissing = errors.New("snapshot: missing")
	// ErrCorrupt: truncated, damaged or not a snapshot at all.
	ErrCorrupt = errors.New("snapshot: corrupt")
	// ErrVersion: written by another file or body format version.
	ErrVersion = errors.New("snapshot: unsupported version")
	// ErrKind: an image of another index.
	ErrKind = errors.New("snapshot: wrong kind")
)

// magic opens every snapshot file; fileVersion is the header's layout
// (version 1 had no padding before the body).
const (
	magic       = "ENGRSNAP"
	fileVersion = 2
	// BodyAlign is the file offset alignment of the body: the header is
	// padded with zero bytes to a multiple of it, so a mapped body (mmap
	// returns page-aligned memory) starts 64-byte aligned and an index can
	// use its arrays in place (vectorindex.ReadSnapshot does only when
	// they are 8-byte aligned).
	BodyAlign = 64
	// maxString bounds the header's strings, so a damaged length cannot
	// make Open allocate much.
	maxString = 256
)

// castagnoli is the CRC-32C table. The standard library builds it, with
// the tables of its SSE4.2 code (1.5 MB of CRC computed, ~0.25 ms), at the
// first call rather than at every process start: a command-line process
// that trusts its images' stamps (stampChecksum) never builds them.
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// Header describes a snapshot's body.
type Header struct {
	// Kind names the index ("keyword", "vectors"); Version is its body
	// format version.
	Kind    string
	Version uint32
	// Checkpoint is the projection checkpoint (a log position) the image
	// reflects: every event up to it is in the image. EventID is the id of
	// the log event at that position ("" at 0).
	Checkpoint uint64
	EventID    string
}

// fixed is the header after the magic: file version, body version, body
// length, checkpoint, CRC-32C of the body, then the kind and event id as
// length-prefixed strings, then zero bytes up to a multiple of BodyAlign.
type fixed struct {
	FileVersion uint32
	Version     uint32
	BodyLen     uint64
	Checkpoint  uint64
	BodyCRC     uint32
	KindLen     uint16
	EventIDLen  uint16
}

// Path is the file of the snapshot of kind in dir.
func Path(dir, kind string) string { return filepath.Join(dir, kind+".snap") }

// Write writes a snapshot of h.Kind to dir atomically: body writes the
// image, which is checksummed as it streams to a temporary file; the file
// is synced, renamed to Path(dir, h.Kind) and dir synced. On any error the
// old snapshot is left as it was.
func Write(dir string, h Header, body func(io.Writer) error) (err error) {
	if err := validate(h); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+h.Kind+".snap.tmp-*")
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	// The header goes first with a zero length and checksum, rewritten
	// once the body is written: the body streams, never held whole.
	hdr := encodeHeader(h, 0, 0)
	if _, err := tmp.Write(hdr); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	crc := crc32.New(castagnoli())
	counted := &countingWriter{w: io.MultiWriter(tmp, crc)}
	buf := bufio.NewWriterSize(counted, 1<<20)
	if err := body(buf); err != nil {
		return fmt.Errorf("snapshot: write %s: %w", h.Kind, err)
	}
	if err := buf.Flush(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if _, err := tmp.WriteAt(encodeHeader(h, counted.n, crc.Sum32()), 0); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("snapshot: sync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := os.Rename(tmp.Name(), Path(dir, h.Kind)); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	// The body was checksummed as it was written: stamp the file so
	// OpenStamped need not read it whole again.
	if f, err := os.Open(Path(dir, h.Kind)); err == nil {
		if id, err := identity(f); err == nil {
			writeStamp(dir, h.Kind, stamp{file: id, crc: crc.Sum32()})
		}
		_ = f.Close()
	}
	return nil
}

func validate(h Header) error {
	if h.Kind == "" || len(h.Kind) > maxString || strings.ContainsAny(h.Kind, `/\`) {
		return fmt.Errorf("snapshot: invalid kind %q", h.Kind)
	}
	if len(h.EventID) > maxString {
		return fmt.Errorf("snapshot: event id of %d bytes", len(h.EventID))
	}
	return nil
}

func encodeHeader(h Header, bodyLen uint64, crc uint32) []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	_ = binary.Write(&b, binary.LittleEndian, fixed{
		FileVersion: fileVersion, Version: h.Version, BodyLen: bodyLen, Checkpoint: h.Checkpoint, BodyCRC: crc,
		KindLen: uint16(len(h.Kind)), EventIDLen: uint16(len(h.EventID)),
	})
	b.WriteString(h.Kind)
	b.WriteString(h.EventID)
	b.Write(make([]byte, padding(b.Len())))
	return b.Bytes()
}

// padding is the number of zero bytes that bring a header of n bytes to a
// multiple of BodyAlign.
func padding(n int) int { return (BodyAlign - n%BodyAlign) % BodyAlign }

type countingWriter struct {
	w io.Writer
	n uint64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("snapshot: sync dir: %w", err)
	}
	return nil
}

// File is an open snapshot: its header and its verified body.
type File struct {
	Header Header
	// Body is the image. It may be a read-only mapping of the file: it is
	// valid until Close, and must not be written.
	Body  []byte
	close func() error
}

// Close releases the body.
func (f *File) Close() error {
	if f.close == nil {
		return nil
	}
	c := f.close
	f.close, f.Body = nil, nil
	return c()
}

// Open opens the snapshot of kind in dir and verifies it: its header, that
// it holds an image of kind in body format version (or one of the older
// versions its reader still reads), and its checksum, which reads every
// byte. It stamps a file it verified (see OpenStamped).
func Open(dir, kind string, version uint32, older ...uint32) (*File, error) {
	return open(dir, kind, false, append([]uint32{version}, older...))
}

// OpenStamped opens the snapshot as Open does, except that it does not
// checksum a body that was checksummed whole before, by the Write that
// wrote the file or an Open that read it since, and has not changed since:
// its stamp (<kind>.verified: the file's device, inode, size, modification
// and status change times and body checksum) matches the file. Any change
// to the file through the file system (a torn or foreign write, a
// truncation, a replacement) changes its status change time, which cannot
// be set back, so the body is then checksummed again. For a process that
// opens an image at every run and reads a few of its pages (a command-line
// search): the checksum read every page of it, 28 % of such a process's
// CPU at 100k memories (docs/snapshots.md#verified-once).
func OpenStamped(dir, kind string, version uint32, older ...uint32) (*File, error) {
	return open(dir, kind, true, append([]uint32{version}, older...))
}

func open(dir, kind string, trustStamp bool, versions []uint32) (*File, error) {
	path := Path(dir, kind)
	data, release, id, err := mapFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w", ErrMissing, err)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	h, body, crc, err := parseHeader(data, kind, versions)
	if err == nil {
		err = verify(dir, kind, body, stamp{file: id, crc: crc}, trustStamp)
	}
	if err != nil {
		_ = release()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &File{Header: h, Body: body, close: release}, nil
}

// verify checks body against the checksum its header names, unless
// trustStamp and the file's stamp says it was checked as it is; it stamps
// a file it checks.
func verify(dir, kind string, body []byte, want stamp, trustStamp bool) error {
	known := want.file != fileID{}
	stamped := known && readStamp(dir, kind) == want
	if trustStamp && stamped {
		return nil
	}
	if crc32.Checksum(body, castagnoli()) != want.crc {
		return fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	if known && !stamped {
		writeStamp(dir, kind, want)
	}
	return nil
}

func parseHeader(data []byte, kind string, versions []uint32) (Header, []byte, uint32, error) {
	var f fixed
	size := len(magic) + binary.Size(f)
	if len(data) < size || string(data[:len(magic)]) != magic {
		return Header{}, nil, 0, fmt.Errorf("%w: no snapshot header", ErrCorrupt)
	}
	if _, err := binary.Decode(data[len(magic):size], binary.LittleEndian, &f); err != nil {
		return Header{}, nil, 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if f.FileVersion != fileVersion {
		return Header{}, nil, 0, fmt.Errorf("%w: file format %d, this build reads %d", ErrVersion, f.FileVersion, fileVersion)
	}
	if f.KindLen > maxString || f.EventIDLen > maxString || len(data) < size+int(f.KindLen)+int(f.EventIDLen) {
		return Header{}, nil, 0, fmt.Errorf("%w: truncated header", ErrCorrupt)
	}
	h := Header{Version: f.Version, Checkpoint: f.Checkpoint}
	h.Kind = string(data[size : size+int(f.KindLen)])
	size += int(f.KindLen)
	h.EventID = string(data[size : size+int(f.EventIDLen)])
	size += int(f.EventIDLen)
	pad := padding(size)
	if len(data) < size+pad || !bytes.Equal(data[size:size+pad], make([]byte, pad)) {
		return Header{}, nil, 0, fmt.Errorf("%w: bad header padding", ErrCorrupt)
	}
	size += pad
	if h.Kind != kind {
		return h, nil, 0, fmt.Errorf("%w: an image of %q, not %q", ErrKind, h.Kind, kind)
	}
	if !slices.Contains(versions, h.Version) {
		return h, nil, 0, fmt.Errorf("%w: %s format %d, this build reads %v", ErrVersion, kind, h.Version, versions)
	}
	body := data[size:]
	if uint64(len(body)) != f.BodyLen {
		return h, nil, 0, fmt.Errorf("%w: body of %d bytes, header says %d", ErrCorrupt, len(body), f.BodyLen)
	}
	return h, body, f.BodyCRC, nil
}

// Dir is the snapshots of one data directory: domain.IndexSnapshots over
// Write, each kind's body in format version Versions[kind].
type Dir struct {
	Path     string
	Versions map[string]uint32
}

var _ domain.IndexSnapshots = Dir{}

// SaveIndexSnapshot implements domain.IndexSnapshots.
func (d Dir) SaveIndexSnapshot(ctx context.Context, kind string, tag domain.IndexSnapshot, image func(io.Writer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	version, ok := d.Versions[kind]
	if !ok {
		return fmt.Errorf("snapshot: no format version for %q", kind)
	}
	return Write(d.Path, Header{Kind: kind, Version: version, Checkpoint: tag.Checkpoint, EventID: tag.EventID}, image)
}

// DeleteIndexSnapshot implements domain.IndexSnapshots.
func (d Dir) DeleteIndexSnapshot(ctx context.Context, kind string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return Remove(d.Path, kind)
}

// Remove deletes the snapshot of kind in dir, if any, durably, and its
// stamp.
func Remove(dir, kind string) error {
	_ = os.Remove(stampPath(dir, kind))
	err := os.Remove(Path(dir, kind))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return syncDir(dir)
}

// RemoveTemporary deletes the temporary files of writes a crash
// interrupted. Only the data dir's owner may call it: another process's
// write in progress would fail.
func RemoveTemporary(dir string) error {
	tmps, err := filepath.Glob(filepath.Join(dir, ".*.snap.tmp-*"))
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	stamps, _ := filepath.Glob(filepath.Join(dir, ".*.verified.tmp-*"))
	tmps = append(tmps, stamps...)
	var errs []error
	for _, t := range tmps {
		if err := os.Remove(t); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// fileID identifies a file's content as the file system tracks its
// changes (identity); the zero value is unknown (no stamps).
type fileID struct {
	Dev, Ino, Size uint64
	Mtime, Ctime   int64
}

// stamp records that a file, as fileID identifies it, had a body of
// checksum crc when it was checksummed whole.
type stamp struct {
	file fileID
	crc  uint32
}

// stampMagic opens a stamp file; the stamp follows, then the CRC-32C of
// both, so a torn or damaged stamp is no stamp.
const stampMagic = "ENGRSTMP"

func stampPath(dir, kind string) string { return filepath.Join(dir, kind+".verified") }

func (s stamp) encode() []byte {
	b := []byte(stampMagic)
	for _, v := range []uint64{s.file.Dev, s.file.Ino, s.file.Size, uint64(s.file.Mtime), uint64(s.file.Ctime), uint64(s.crc)} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return binary.LittleEndian.AppendUint32(b, stampChecksum(b))
}

// stampChecksum is the CRC-32C of a stamp's 56 bytes, computed a bit at a
// time (~2 µs): crc32.Checksum would first build the standard library's
// CRC-32C tables, which cost a hundred times more than this, in every
// command-line process that reads a stamp and checksums nothing else.
func stampChecksum(b []byte) uint32 {
	const castagnoliReversed = 0x82f63b78
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for range 8 {
			crc = crc>>1 ^ castagnoliReversed&-(crc&1)
		}
	}
	return ^crc
}

// readStamp is kind's stamp in dir, the zero stamp when there is none or
// it is damaged.
func readStamp(dir, kind string) stamp {
	b, err := os.ReadFile(stampPath(dir, kind))
	const size = len(stampMagic) + 6*8 + 4
	if err != nil || len(b) != size || string(b[:len(stampMagic)]) != stampMagic ||
		stampChecksum(b[:size-4]) != binary.LittleEndian.Uint32(b[size-4:]) {
		return stamp{}
	}
	v := func(i int) uint64 { return binary.LittleEndian.Uint64(b[len(stampMagic)+8*i:]) }
	return stamp{file: fileID{Dev: v(0), Ino: v(1), Size: v(2), Mtime: int64(v(3)), Ctime: int64(v(4))}, crc: uint32(v(5))}
}

// writeStamp replaces kind's stamp in dir (a temporary file renamed over
// it). It is a hint: unsynced, and a failure leaves the old one (which
// names another file, or this one) or none, so the next open checksums
// the body again. Two processes may write it at once; either stamp is
// true of the file it names.
func writeStamp(dir, kind string, s stamp) {
	tmp, err := os.CreateTemp(dir, "."+kind+".verified.tmp-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(s.encode())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), stampPath(dir, kind))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
}
