package vectorindex

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"
)

// Int8 quantisation (Options.Quantize). A quantised collection keeps on the
// heap one int8 code per dimension and one float32 scale per vector (104
// bytes at 100 dims instead of 400); graph walks and scans rank by the codes,
// and the best rescoreFactor×k candidates are then rescored against the
// full-precision vectors, which live in an unlinked file (floatFile): the
// kernel's page cache, which it may evict under memory pressure, instead of
// the process heap.
//
// The scale is per vector (max |x| / 127): embeddings are unit vectors whose
// components have similar magnitudes across dimensions, and a per-vector
// scale needs no training pass over the data, so codes can be written as
// vectors arrive.

// rescoreFactor: a quantised search rescores this many candidates per hit
// asked for. Rounding moves a 100-d unit vector's scores by ~0.001
// (TestQuantizedDotWithinRoundingBound bounds it), far less than the gap
// between the 10th and the 40th neighbour: recall@10 was 1.000 at 200k
// (BenchmarkLargeCollection).
const rescoreFactor = 4

// quantizeInto writes v's codes into dst and returns the scale that maps
// them back (x ≈ scale·code).
func quantizeInto(dst []int8, v []float32) float32 {
	var maxAbs float32
	for _, x := range v {
		maxAbs = max(maxAbs, float32(math.Abs(float64(x))))
	}
	if maxAbs == 0 {
		clear(dst)
		return 0
	}
	inv := 127 / maxAbs
	for i, x := range v {
		dst[i] = int8(math.Round(float64(x * inv)))
	}
	return maxAbs / 127
}

// dotCodes is Σ q[i]·code[i]; the caller multiplies by the vector's scale.
// Four accumulators keep the loop from waiting on one dependency chain.
func dotCodes(q []float32, code []int8) float32 {
	code = code[:len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		s0 += q[i] * float32(code[i])
		s1 += q[i+1] * float32(code[i+1])
		s2 += q[i+2] * float32(code[i+2])
		s3 += q[i+3] * float32(code[i+3])
	}
	for ; i < len(q); i++ {
		s0 += q[i] * float32(code[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// vectorView is what the graph and the scans read a collection's vectors
// through: full-precision floats, or int8 codes with their scales. A view
// taken under the collection's read lock stays valid without it for the
// slots that existed then (stable slots never change; growth copies).
type vectorView struct {
	dim       int
	quantized bool
	floats    slotArray[float32] // unquantised: slot i at [i*dim, (i+1)*dim)
	codes     slotArray[int8]    // quantised: likewise
	scales    slotArray[float32] // quantised: per slot
}

// sim is the similarity of q (full precision) to slot id.
func (v *vectorView) sim(q []float32, id uint32) float32 {
	o := int(id) * v.dim
	if !v.quantized {
		return dot(q, v.floats.at(o, v.dim))
	}
	return v.scales.elem(int(id)) * dotCodes(q, v.codes.at(o, v.dim))
}

// load returns slot id as floats: the stored vector itself, or its codes
// decoded into buf (which must hold dim floats).
func (v *vectorView) load(buf []float32, id uint32) []float32 {
	o := int(id) * v.dim
	if !v.quantized {
		return v.floats.at(o, v.dim)
	}
	s := v.scales.elem(int(id))
	for i, x := range v.codes.at(o, v.dim) {
		buf[i] = s * float32(x)
	}
	return buf[:v.dim]
}

// floatFile holds a quantised collection's full-precision vectors, slot i at
// byte i*dim*4, in a file removed from its directory as soon as it is
// created: nothing is left behind by a crash, and the space is freed when
// the file is closed (by release, or by the os.File finalizer once an Index
// is garbage).
//
// A collection loaded from a snapshot keeps the vectors of its first
// mappedSlots slots in the snapshot's bytes (little-endian float32s, often
// a memory-mapped file); the file then holds only the slots after them.
//
// A snapshot being written reads the file without the collection's lock,
// so the file is reference-counted: close only marks it closed while a
// snapshot holds it, and the last release closes it.
type floatFile struct {
	f   *os.File
	dim int

	mapped      []byte // slots [0, mappedSlots), read-only
	mappedSlots int

	mu     sync.Mutex
	refs   int
	closed bool
}

func newFloatFile(dir string, dim int) (*floatFile, error) {
	f, err := os.CreateTemp(dir, "engram-vectors-*.f32")
	if err != nil {
		return nil, fmt.Errorf("vectorindex: float file: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("vectorindex: float file: %w", err)
	}
	return &floatFile{f: f, dim: dim}, nil
}

func (ff *floatFile) slotBytes() int64 { return int64(ff.dim) * 4 }

// write stores vecs (whole vectors) from slot first on; first is never
// below mappedSlots (slots are appended).
func (ff *floatFile) write(first int, vecs []float32) error {
	if first < ff.mappedSlots {
		return fmt.Errorf("vectorindex: write float file: slot %d is in the read-only snapshot", first)
	}
	buf := make([]byte, len(vecs)*4)
	for i, x := range vecs {
		binary.LittleEndian.PutUint32(buf[i*4:], math.Float32bits(x))
	}
	if _, err := ff.f.WriteAt(buf, int64(first-ff.mappedSlots)*ff.slotBytes()); err != nil {
		return fmt.Errorf("vectorindex: write float file: %w", err)
	}
	return nil
}

// read fills dst (whole vectors) from slot first on; buf is reusable
// scratch, returned grown.
func (ff *floatFile) read(first int, dst []float32, buf []byte) ([]byte, error) {
	n := len(dst) * 4
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	src := buf
	if first < ff.mappedSlots {
		// The mapped prefix, then (for a range crossing it) the file.
		lo := int64(first) * ff.slotBytes()
		inMap := min(int64(n), int64(len(ff.mapped))-lo)
		src = ff.mapped[lo : lo+inMap]
		if inMap < int64(n) {
			copy(buf, src)
			if _, err := ff.f.ReadAt(buf[inMap:], 0); err != nil {
				return buf, fmt.Errorf("vectorindex: read float file: %w", err)
			}
			src = buf
		}
	} else if _, err := ff.f.ReadAt(buf, int64(first-ff.mappedSlots)*ff.slotBytes()); err != nil {
		return buf, fmt.Errorf("vectorindex: read float file: %w", err)
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[i*4:]))
	}
	return buf, nil
}

// acquire keeps the file open until the matching release (caller holds the
// collection's lock, so the file is not closed yet).
func (ff *floatFile) acquire() {
	ff.mu.Lock()
	ff.refs++
	ff.mu.Unlock()
}

func (ff *floatFile) release() {
	ff.mu.Lock()
	defer ff.mu.Unlock()
	ff.refs--
	if ff.closed && ff.refs == 0 {
		ff.f.Close()
	}
}

func (ff *floatFile) close() {
	ff.mu.Lock()
	defer ff.mu.Unlock()
	ff.closed = true
	if ff.refs == 0 {
		ff.f.Close()
	}
}
