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
// bounded size, no unknown fields, exactly one value, an integral number
// taken for an integer field (62.0, as JSON Schema has it). Errors name
// the field.
func decodeJSON(r *http.Request, v any) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return domain.Errorf(domain.KindUnsupportedMedia, "request body must be JSON: send Content-Type: application/json")
	}
	body, err := readBody(r)
	if err != nil {
		return jsonError(err)
	}
	// encoding/json takes null for a struct as "leave it alone", which
	// would make a null body an empty patch; the document says a body is
	// an object, and null is "absent" only for an optional field.
	if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		return domain.Errorf(domain.KindInvalid, "request body must be a JSON object, not null")
	}
	return decodeOne(body, v, "request body must hold exactly one JSON object")
}

// maxBodyPresize bounds the buffer readBody sizes from the declared
// Content-Length before any byte arrived.
const maxBodyPresize = 1 << 20

// readBody reads the request body whole, so the decoder can go over it
// again when it needs its integral numbers rewritten
// (domain.DecodeIntegral); json.Decoder would hold the whole value in its
// buffer anyway. The buffer is sized from Content-Length (up to
// maxBodyPresize, and bytes.MinRead more for the read that meets the end)
// so a large batch is not copied at each doubling.
func readBody(r *http.Request) ([]byte, error) {
	size := int64(bytes.MinRead)
	if r.ContentLength > 0 {
		size += min(r.ContentLength, maxBodyPresize)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	_, err := buf.ReadFrom(r.Body)
	return buf.Bytes(), err
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
	return decodeOne(raw, v, "arguments must be one JSON object")
}

// errNotOne is a JSON text of more than one value.
var errNotOne = errors.New("more than one JSON value")

// decodeOne decodes data, exactly one JSON value, into v: no unknown
// fields, an integral number taken for an integer field; notOne is the
// message for data of more than one value.
func decodeOne(data []byte, v any, notOne string) error {
	err := domain.DecodeIntegral(data, v, func(data []byte, v any) error {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return err
		}
		if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
			return errNotOne
		}
		return nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNotOne):
		return domain.Errorf(domain.KindInvalid, "%s", notOne)
	}
	return jsonError(err)
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
