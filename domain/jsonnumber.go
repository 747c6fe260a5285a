package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
)

// DecodeIntegral runs decode(data, v) and, when encoding/json refused a
// number for an integer field, runs it again on data with every integral
// number written with a fraction or an exponent (62.0, 6.2e1, 620e-1)
// written as an integer (62), v restored first to the value it held before
// the first decode (a value decoded onto defaults, or onto the settings a
// patch merges into, keeps them for the fields data leaves out). JSON
// Schema, and so the OpenAPI document and the clients generated from it,
// calls such a number an integer; encoding/json does not. The rewrite
// happens only after such a refusal, so the common request pays nothing
// for it; a number that is not integral (62.5) is refused as before, by
// the second decode, naming its field.
func DecodeIntegral(data []byte, v any, decode func(data []byte, v any) error) error {
	var before reflect.Value
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		before = reflect.New(rv.Elem().Type()).Elem()
		before.Set(rv.Elem())
	}
	err := decode(data, v)
	if !refusedNumberForInteger(err) {
		return err
	}
	rewritten, changed := integralNumbersAsIntegers(data)
	if !changed {
		return err
	}
	if before.IsValid() {
		reflect.ValueOf(v).Elem().Set(before)
	}
	return decode(rewritten, v)
}

// refusedNumberForInteger reports whether err is encoding/json refusing a
// number literal for a field of an integer type.
func refusedNumberForInteger(err error) bool {
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &typ) || typ.Type == nil || !strings.HasPrefix(typ.Value, "number") {
		return false
	}
	switch typ.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// integralNumbersAsIntegers returns data, one JSON value, with every
// integral number written with a fraction or an exponent written as an
// integer, and whether it changed one. data that does not parse is
// returned as it is (the decoder's own error stands).
func integralNumbersAsIntegers(data []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil {
		return data, false
	}
	value, changed := rewriteIntegral(value)
	if !changed {
		return data, false
	}
	out, err := json.Marshal(value)
	if err != nil {
		return data, false
	}
	return out, true
}

func rewriteIntegral(value any) (any, bool) {
	changed := false
	switch v := value.(type) {
	case json.Number:
		if s, ok := integerLiteral(string(v)); ok && s != string(v) {
			return json.Number(s), true
		}
	case map[string]any:
		for k, item := range v {
			if rewritten, c := rewriteIntegral(item); c {
				v[k], changed = rewritten, true
			}
		}
	case []any:
		for i, item := range v {
			if rewritten, c := rewriteIntegral(item); c {
				v[i], changed = rewritten, true
			}
		}
	}
	return value, changed
}

// maxIntegerDigits bounds the integers integerLiteral writes: 20 digits
// hold every int64 and uint64, and a longer one fits no integer field (the
// decoder refuses the number as written), so an exponent cannot make it
// write a number of a million digits.
const maxIntegerDigits = 20

// integerLiteral returns the JSON number literal s as an integer literal
// when its value is an integer (62.0, 6.2e1, -620e-1, 0.0e5), exactly,
// from its digits: no float rounds 62.0000000000000000001 to 62.
func integerLiteral(s string) (string, bool) {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	mantissa, exponent := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		// Past ±2^30 no literal of a body can bring the value back into
		// an integer's range, and shift below cannot overflow.
		if err != nil || e > 1<<30 || e < -1<<30 {
			return "", false
		}
		mantissa, exponent = s[:i], e
	}
	whole, fraction, _ := strings.Cut(mantissa, ".")
	digits := strings.TrimLeft(whole+fraction, "0")
	if digits == "" {
		return "0", true
	}
	// The value is digits × 10^shift.
	shift := exponent - len(fraction)
	switch {
	case shift < 0:
		if -shift >= len(digits) || strings.TrimLeft(digits[len(digits)+shift:], "0") != "" {
			return "", false
		}
		digits = digits[:len(digits)+shift]
	case shift > 0:
		if shift > maxIntegerDigits || len(digits)+shift > maxIntegerDigits {
			return "", false
		}
		digits += strings.Repeat("0", shift)
	}
	return sign + digits, true
}
