package memory

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
)

// Vector is an embedding. In JSON (and so in events) it is a string holding
// base64 of little-endian float32s: a quarter of the size of a number array
// and exact.
//
// It implements encoding.TextMarshaler rather than json.Marshaler: the JSON
// bytes are the same, but encoding/json then writes and reads the string
// directly instead of re-scanning a Marshaler's output, which makes events
// carrying vectors about twice as fast to encode and decode.
type Vector []float32

// MarshalText implements encoding.TextMarshaler.
func (v Vector) MarshalText() ([]byte, error) {
	buf := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(len(buf)))
	base64.StdEncoding.Encode(out, buf)
	return out, nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (v *Vector) UnmarshalText(text []byte) error {
	buf := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(buf, text)
	if err != nil {
		return fmt.Errorf("vector: %w", err)
	}
	buf = buf[:n]
	if len(buf)%4 != 0 {
		return fmt.Errorf("vector: %d bytes is not a whole number of float32s", len(buf))
	}
	out := make(Vector, len(buf)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
	}
	*v = out
	return nil
}
