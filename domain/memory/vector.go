package memory

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
)

// Vector is an embedding. In JSON (and so in events) it is base64 of
// little-endian float32s: a quarter of the size of a number array and exact.
type Vector []float32

func (v Vector) MarshalJSON() ([]byte, error) {
	buf := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(buf))
}

func (v *Vector) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("vector: %w", err)
	}
	buf, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("vector: %w", err)
	}
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
