package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"

	"github.com/engram-memory/engram/domain"
)

// decodeJSON reads the request body into v strictly: JSON content type,
// bounded size, no unknown fields, exactly one value. Errors name the field.
func decodeJSON(r *http.Request, v any) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return domain.Errorf(domain.KindUnsupportedMedia, "request body must be JSON: send Content-Type: application/json")
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		if err == nil || !isTooLarge(err) {
			return domain.Errorf(domain.KindInvalid, "request body must hold exactly one JSON object")
		}
		return jsonError(err)
	}
	return nil
}

// DecodeArguments decodes raw, one JSON object, into v as strictly as a
// request body: no unknown fields, exactly one value, errors naming the
// field as the API does. The MCP tools decode their arguments with it.
func DecodeArguments(raw json.RawMessage, v any) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		raw = json.RawMessage("{}")
	} else if t[0] != '{' {
		return domain.Errorf(domain.KindInvalid, "arguments must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return domain.Errorf(domain.KindInvalid, "arguments must be one JSON object")
	}
	return nil
}

func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

func jsonError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return domain.Errorf(domain.KindTooLarge, "request body exceeds the limit of %d bytes", mbe.Limit).WithDetail("limit", mbe.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return domain.Errorf(domain.KindTimeout, "the request body did not arrive in time")
	case errors.As(err, &syntax):
		return domain.Errorf(domain.KindInvalid, "malformed JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return domain.Errorf(domain.KindInvalid, "request body must be a JSON object")
		}
		return domain.Invalid(field, "field %q must be %s, not %s", field, typeName(typ.Type.String()), typ.Value)
	case errors.Is(err, io.EOF):
		return domain.Errorf(domain.KindInvalid, "request body is empty: a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Errorf(domain.KindInvalid, "malformed JSON: unexpected end of body")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return domain.Invalid(field, "unknown field %q", field)
	default:
		return domain.Errorf(domain.KindInvalid, "malformed JSON: %v", err)
	}
}

func typeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map[") || strings.HasPrefix(goType, "struct") || strings.Contains(goType, "."):
		return "an object"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "a boolean"
	case goType == "string":
		return "a string"
	}
	return fmt.Sprintf("of type %s", goType)
}
