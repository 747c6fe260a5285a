package local

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

// maxSafetensorsHeader bounds the JSON header we are willing to parse; real
// headers are a few hundred bytes per tensor.
const maxSafetensorsHeader = 100 << 20

// tensorInfo is one entry of a safetensors header.
type tensorInfo struct {
	DType       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// matrix is a dense row-major float32 matrix.
type matrix struct {
	rows, cols int
	data       []float32
}

func (m matrix) row(i int) []float32 { return m.data[i*m.cols : (i+1)*m.cols] }

// readSafetensorsMatrix reads the 2-D tensor called name from a safetensors
// file: an 8-byte little-endian header length N, N bytes of JSON mapping
// tensor names to dtype/shape/data_offsets, then the raw little-endian data
// (offsets are relative to the end of the header). F32, F16 and BF16 are
// accepted and returned as float32.
func readSafetensorsMatrix(path, name string) (matrix, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return matrix{}, fmt.Errorf("read %s: %w", path, err)
	}
	header, data, err := splitSafetensors(raw)
	if err != nil {
		return matrix{}, fmt.Errorf("%s: %w", path, err)
	}
	info, ok := header[name]
	if !ok {
		return matrix{}, fmt.Errorf("%s: no tensor named %q (found %s)", path, name, strings.Join(sortedKeys(header), ", "))
	}
	m, err := decodeMatrix(info, data)
	if err != nil {
		return matrix{}, fmt.Errorf("%s: tensor %q: %w", path, name, err)
	}
	return m, nil
}

// splitSafetensors parses the header and returns it with the data section.
func splitSafetensors(raw []byte) (map[string]tensorInfo, []byte, error) {
	if len(raw) < 8 {
		return nil, nil, fmt.Errorf("not a safetensors file: %d bytes, shorter than the 8-byte header length", len(raw))
	}
	n := binary.LittleEndian.Uint64(raw[:8])
	if n > maxSafetensorsHeader || n > uint64(len(raw)-8) {
		return nil, nil, fmt.Errorf("bad safetensors header length %d for a %d-byte file", n, len(raw))
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &entries); err != nil {
		return nil, nil, fmt.Errorf("bad safetensors header JSON: %w", err)
	}
	header := make(map[string]tensorInfo, len(entries))
	for key, val := range entries {
		if key == "__metadata__" {
			continue
		}
		var info tensorInfo
		if err := json.Unmarshal(val, &info); err != nil {
			return nil, nil, fmt.Errorf("bad safetensors header entry %q: %w", key, err)
		}
		header[key] = info
	}
	return header, raw[8+n:], nil
}

// decodeMatrix checks the entry against the data and converts it.
func decodeMatrix(info tensorInfo, data []byte) (matrix, error) {
	if len(info.Shape) != 2 {
		return matrix{}, fmt.Errorf("shape %v is not 2-D", info.Shape)
	}
	rows, cols := info.Shape[0], info.Shape[1]
	if rows <= 0 || cols <= 0 || rows > math.MaxInt32 || cols > math.MaxInt32 || rows*cols > math.MaxInt32 {
		return matrix{}, fmt.Errorf("unusable shape %v", info.Shape)
	}
	var width int64
	switch info.DType {
	case "F32":
		width = 4
	case "F16", "BF16":
		width = 2
	default:
		return matrix{}, fmt.Errorf("dtype %s is not supported (want F32, F16 or BF16)", info.DType)
	}
	begin, end := info.DataOffsets[0], info.DataOffsets[1]
	if begin < 0 || end < begin || end > int64(len(data)) {
		return matrix{}, fmt.Errorf("data_offsets [%d, %d] outside the %d-byte data section", begin, end, len(data))
	}
	if want := rows * cols * width; end-begin != want {
		return matrix{}, fmt.Errorf("shape %v of %s needs %d bytes but data_offsets span %d", info.Shape, info.DType, want, end-begin)
	}
	buf := data[begin:end]
	out := make([]float32, rows*cols)
	for i := range out {
		switch info.DType {
		case "F32":
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		case "F16":
			out[i] = float16ToFloat32(binary.LittleEndian.Uint16(buf[2*i:]))
		case "BF16":
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(buf[2*i:])) << 16)
		}
	}
	return matrix{rows: int(rows), cols: int(cols), data: out}, nil
}

// float16ToFloat32 converts an IEEE 754 half-precision value.
func float16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0: // signed zero
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: value = frac · 2^-24
		f := float32(frac) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
