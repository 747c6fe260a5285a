package domain

import (
	"encoding/json"
	"strings"
	"testing"
)

// An integral number is an integer whatever its spelling (JSON Schema's
// rule); any other stays as written, and no exponent makes the rewrite
// write more digits than an integer field holds.
func TestIntegerLiteral(t *testing.T) {
	t.Parallel()
	tests := []struct {
		literal, want string
		integral      bool
	}{
		{"62.0", "62", true},
		{"6.2e1", "62", true},
		{"6.2E+1", "62", true},
		{"620e-1", "62", true},
		{"-62.000", "-62", true},
		{"10.0e-1", "1", true},
		{"0.0", "0", true},
		{"-0.0e7", "0", true},
		{"0e99999999999999999999", "", false}, // an exponent no int holds
		{"1e19", "10000000000000000000", true},
		{"62.5", "", false},
		{"62.0000000000000000001", "", false}, // a float64 would round it to 62
		{"0.5", "", false},
		{"6.25e1", "", false},
		{"1e21", "", false},      // no integer field holds it
		{"1e1000000", "", false}, // nor a million digits
		{"1e-1000000", "", false},
		{"1e-9223372036854775808", "", false},
		{"1e9223372036854775807", "", false},
	}
	for _, tt := range tests {
		got, ok := integerLiteral(tt.literal)
		if ok != tt.integral || got != tt.want {
			t.Errorf("integerLiteral(%s) = %q, %v; want %q, %v", tt.literal, got, ok, tt.want, tt.integral)
		}
	}
}

// DecodeIntegral takes an integral number for an integer field at any
// depth, and refuses any other as json does, naming its field.
func TestDecodeIntegral(t *testing.T) {
	t.Parallel()
	type inner struct {
		Count int     `json:"count"`
		Ratio float64 `json:"ratio"`
	}
	type body struct {
		Limit  *int    `json:"limit"`
		Items  []inner `json:"items"`
		Name   string  `json:"name"`
		Unsign uint16  `json:"unsign"`
	}
	strict := func(data []byte, v any) error {
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		return dec.Decode(v)
	}
	var b body
	err := DecodeIntegral([]byte(`{"limit":62.0,"items":[{"count":6.2e1,"ratio":0.5},{"count":1}],"name":"62.0","unsign":1.0e2}`), &b, strict)
	if err != nil || *b.Limit != 62 || b.Items[0].Count != 62 || b.Items[0].Ratio != 0.5 || b.Items[1].Count != 1 || b.Name != "62.0" || b.Unsign != 100 {
		t.Fatalf("integral numbers: %v %+v", err, b)
	}
	for literal, field := range map[string]string{
		`{"limit":62.5}`:               "limit",
		`{"items":[{"count":6.25e1}]}`: "items.count",
		`{"limit":62.0,"unsign":-1.0}`: "unsign",
		`{"limit":1e30}`:               "limit",
		`{"limit":62.0,"unknown":1}`:   "",
	} {
		var b body
		err := DecodeIntegral([]byte(literal), &b, strict)
		var typ *json.UnmarshalTypeError
		switch {
		case field == "" && (err == nil || !strings.Contains(err.Error(), "unknown field")):
			t.Errorf("%s: %v, want the unknown field refused", literal, err)
		case field != "" && (!asTypeError(err, &typ) || typ.Field != field):
			t.Errorf("%s: %v, want json's refusal of %s", literal, err, field)
		}
	}
}

func asTypeError(err error, typ **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	*typ = t
	return ok
}
