package meilitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// expr is a parsed filter expression.
type expr interface {
	match(values map[string]any) bool
	attributes() []string
}

type andExpr []expr
type orExpr []expr
type notExpr struct{ e expr }

// cmpExpr is `attr op value`, or `attr IN [values]` (op "IN").
type cmpExpr struct {
	attr   string
	op     string
	values []string
}

func (a andExpr) match(f map[string]any) bool {
	for _, e := range a {
		if !e.match(f) {
			return false
		}
	}
	return true
}

func (o orExpr) match(f map[string]any) bool {
	for _, e := range o {
		if e.match(f) {
			return true
		}
	}
	return false
}

func (n notExpr) match(f map[string]any) bool { return !n.e.match(f) }

func (a andExpr) attributes() []string { return childAttributes(a) }
func (o orExpr) attributes() []string  { return childAttributes(o) }
func (n notExpr) attributes() []string { return n.e.attributes() }
func (c cmpExpr) attributes() []string { return []string{c.attr} }

func childAttributes(es []expr) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.attributes()...)
	}
	return out
}

// match: an array field matches when one of its elements does; "!=" is
// the negation of "=" over the whole field, as in Meilisearch.
func (c cmpExpr) match(f map[string]any) bool {
	v, ok := f[c.attr]
	if !ok {
		return c.op == "!="
	}
	elems := []any{v}
	if arr, ok := v.([]any); ok {
		elems = arr
	}
	if c.op == "!=" {
		return !(cmpExpr{attr: c.attr, op: "=", values: c.values}).match(f)
	}
	for _, e := range elems {
		for _, want := range c.values {
			if compare(e, c.op, want) {
				return true
			}
		}
	}
	return false
}

// compare applies op ("=", "IN", or an order) to one field value.
func compare(v any, op, want string) bool {
	switch x := v.(type) {
	case string:
		return (op == "=" || op == "IN") && x == want
	case bool:
		return (op == "=" || op == "IN") && strconv.FormatBool(x) == want
	case json.Number:
		got, err1 := x.Float64()
		w, err2 := strconv.ParseFloat(want, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		switch op {
		case "=", "IN":
			return got == w
		case ">":
			return got > w
		case ">=":
			return got >= w
		case "<":
			return got < w
		case "<=":
			return got <= w
		}
	}
	return false
}

// checkFilterable fails with code when the expression uses an attribute
// that is not filterable.
func checkFilterable(ix *index, e expr, code string) *apiError {
	for _, a := range e.attributes() {
		if !ix.isFilterable(a) {
			return newAPIError(code, "invalid_request", "Attribute `%s` is not filterable. Available filterable attributes are: `%s`.", a, strings.Join(ix.filterable, ", "))
		}
	}
	return nil
}

// parseFilterJSON parses a filter given as a string, or as an array whose
// elements (strings, or arrays of strings ORed) are ANDed; nil for none.
func parseFilterJSON(raw json.RawMessage) (expr, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return parseFilter(str)
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(raw, &arr); err != nil {
		return nil, errors.New("filter must be a string or an array")
	}
	var and andExpr
	for _, el := range arr {
		if json.Unmarshal(el, &str) == nil {
			e, err := parseFilter(str)
			if err != nil {
				return nil, err
			}
			and = append(and, e)
			continue
		}
		var ors []string
		if err := json.Unmarshal(el, &ors); err != nil {
			return nil, errors.New("filter array elements must be strings or arrays of strings")
		}
		var or orExpr
		for _, s := range ors {
			e, err := parseFilter(s)
			if err != nil {
				return nil, err
			}
			or = append(or, e)
		}
		and = append(and, or)
	}
	return and, nil
}

// parseFilter parses Meilisearch's filter syntax (the subset in the
// package doc).
func parseFilter(s string) (expr, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q in filter %q", p.toks[p.pos].text, s)
	}
	return e, nil
}

type token struct {
	text   string
	quoted bool // a string literal, never a keyword or operator
}

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.IndexByte("()[],", c) >= 0:
			out = append(out, token{text: string(c)})
			i++
		case c == '!' || c == '<' || c == '>' || c == '=':
			if i+1 < len(s) && s[i+1] == '=' && c != '=' {
				out = append(out, token{text: s[i : i+2]})
				i += 2
			} else if c == '!' {
				return nil, fmt.Errorf("unexpected '!' at %d in filter", i)
			} else {
				out = append(out, token{text: string(c)})
				i++
			}
		case c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string at %d in filter", i)
			}
			out = append(out, token{text: b.String(), quoted: true})
			i = j + 1
		default:
			j := i
			for j < len(s) && strings.IndexByte(" \t\n\r()[],!<>='\"", s[j]) < 0 {
				j++
			}
			out = append(out, token{text: s[i:j]})
			i = j
		}
	}
	return out, nil
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek(keyword string) bool {
	return p.pos < len(p.toks) && !p.toks[p.pos].quoted && p.toks[p.pos].text == keyword
}

func (p *parser) next() (token, error) {
	if p.pos >= len(p.toks) {
		return token{}, errors.New("filter ends too early")
	}
	p.pos++
	return p.toks[p.pos-1], nil
}

func (p *parser) or() (expr, error) {
	e, err := p.and()
	if err != nil {
		return nil, err
	}
	or := orExpr{e}
	for p.peek("OR") {
		p.pos++
		e, err := p.and()
		if err != nil {
			return nil, err
		}
		or = append(or, e)
	}
	if len(or) == 1 {
		return or[0], nil
	}
	return or, nil
}

func (p *parser) and() (expr, error) {
	e, err := p.not()
	if err != nil {
		return nil, err
	}
	and := andExpr{e}
	for p.peek("AND") {
		p.pos++
		e, err := p.not()
		if err != nil {
			return nil, err
		}
		and = append(and, e)
	}
	if len(and) == 1 {
		return and[0], nil
	}
	return and, nil
}

func (p *parser) not() (expr, error) {
	if p.peek("NOT") {
		p.pos++
		e, err := p.not()
		if err != nil {
			return nil, err
		}
		return notExpr{e}, nil
	}
	if p.peek("(") {
		p.pos++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.peek(")") {
			return nil, errors.New("missing ')' in filter")
		}
		p.pos++
		return e, nil
	}
	return p.comparison()
}

func (p *parser) comparison() (expr, error) {
	attr, err := p.next()
	if err != nil {
		return nil, err
	}
	op, err := p.next()
	if err != nil {
		return nil, err
	}
	if op.quoted {
		return nil, fmt.Errorf("expected an operator after %q", attr.text)
	}
	switch op.text {
	case "=", "!=", ">", ">=", "<", "<=":
		v, err := p.next()
		if err != nil {
			return nil, err
		}
		return cmpExpr{attr: attr.text, op: op.text, values: []string{v.text}}, nil
	case "IN":
		if !p.peek("[") {
			return nil, errors.New("expected '[' after IN")
		}
		p.pos++
		var values []string
		for !p.peek("]") {
			v, err := p.next()
			if err != nil {
				return nil, err
			}
			values = append(values, v.text)
			if p.peek(",") {
				p.pos++
			}
		}
		p.pos++
		return cmpExpr{attr: attr.text, op: "IN", values: values}, nil
	}
	return nil, fmt.Errorf("unknown operator %q after %q", op.text, attr.text)
}
