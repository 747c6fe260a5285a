package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// importLineBytes bounds one line of an import file: the largest memory
// (several 32,000-character fields) fits many times over.
const importLineBytes = 4 << 20

// importItemJSON is one line of an import file: an item of
// POST /memories/batch.
type importItemJSON struct {
	Type        string          `json:"type"`
	Content     json.RawMessage `json:"content"`
	Tags        []string        `json:"tags"`
	CreatedAt   string          `json:"created_at"`
	DerivedFrom []string        `json:"derived_from"`
}

func importCommand(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("import", "FILE|-", "Import memories from a JSON Lines file (or stdin with -): one object per line, shaped like an item of POST /memories/batch ({type, content, tags?, created_at?, derived_from?}). Every line's type, content and tags are checked before anything is written; memories are written 1000 per append. Progress goes to stderr when it is a terminal.")
	pos, err := c.parse(flags, args, 1, 1)
	if err != nil {
		return err
	}
	var in io.Reader = c.stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	items, err := readImport(in)
	if err != nil {
		return err
	}
	st, err := c.openStack(ctx, true, writeParts)
	if err != nil {
		return err
	}
	defer st.close()
	bar := c.progress("imported", len(items))
	imported := 0
	for start := 0; start < len(items); start += memory.MaxBatch {
		batch := items[start:min(start+memory.MaxBatch, len(items))]
		if _, err := st.app.Memories.CreateBatch(ctx, st.meta(), st.name, batch); err != nil {
			bar.finish()
			return fmt.Errorf("lines %d-%d: %w (the %d memories before them were imported)", start+1, start+len(batch), lineError(err, start), imported)
		}
		imported += len(batch)
		bar.update(imported)
	}
	bar.finish()
	if c.json {
		return c.printJSON(map[string]any{"stack": st.name, "imported": imported})
	}
	fmt.Fprintf(c.stdout, "imported %d memories into %s\n", imported, st.name)
	return nil
}

// readImport reads every line, rejecting the file at the first line that
// is not one well-formed item.
func readImport(r io.Reader) ([]commands.MemoryInput, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), importLineBytes)
	var out []commands.MemoryInput
	for line := 1; sc.Scan(); line++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var item importItemJSON
		if err := dec.Decode(&item); err != nil {
			return nil, domain.Invalid("line", "line %d: not an import item ({type, content, tags?, created_at?, derived_from?}): %v", line, err).WithDetail("line", line)
		}
		if err := checkImportItem(item); err != nil {
			return nil, lineError(commands.BatchItemError(line-1, err), 0)
		}
		out = append(out, commands.MemoryInput{Type: item.Type, Content: item.Content, Tags: item.Tags, CreatedAt: item.CreatedAt, DerivedFrom: item.DerivedFrom})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the import: %w", err)
	}
	if len(out) == 0 {
		return nil, domain.Invalid("line", "nothing to import: the file has no lines")
	}
	return out, nil
}

// checkImportItem applies the domain's rules for type, content and tags,
// so a bad line stops the import before anything is written.
func checkImportItem(item importItemJSON) error {
	t, ok := memory.ParseType(item.Type)
	if !ok {
		return domain.Invalid("type", "unknown memory type %q", item.Type)
	}
	if _, err := memory.NormalizeContent(t, item.Content); err != nil {
		return err
	}
	_, err := memory.NormalizeTags("tags", item.Tags)
	return err
}

// lineError names the line of a batch item's error (details.index is the
// item's index in the batch).
func lineError(err error, offset int) error {
	de, ok := domain.AsError(err)
	if !ok {
		return err
	}
	if i, ok := de.Details["index"].(int); ok {
		c := de.WithDetail("line", offset+i+1)
		c.Message = fmt.Sprintf("line %d: %s", offset+i+1, de.Message)
		return c
	}
	return err
}

// progress reports long work on stderr when it is a terminal, on one
// line rewritten in place; --quiet or a pipe silences it.
type progress struct {
	w       io.Writer
	enabled bool
	label   string
	total   int
	shown   bool
}

func (c *cli) progress(label string, total int) *progress {
	f, ok := c.stderr.(*os.File)
	enabled := ok && !c.quiet && term.IsTerminal(int(f.Fd()))
	return &progress{w: c.stderr, enabled: enabled, label: label, total: total}
}

func (p *progress) update(done int) {
	if !p.enabled {
		return
	}
	fmt.Fprintf(p.w, "\r%s %d/%d (%d%%)", p.label, done, p.total, done*100/max(p.total, 1))
	p.shown = true
}

// finish ends the progress line.
func (p *progress) finish() {
	if p.shown {
		fmt.Fprintln(p.w)
		p.shown = false
	}
}
