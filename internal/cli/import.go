package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

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
	flags := c.flags("import", "FILE|- [--local|--cloud] [--chunk-bytes N]", "Import a JSON Lines file (or stdin with -) of one of two kinds:\n\n"+
		"  an Engram export (engram export, GET /v1/agents/{id}/export; its first line is {\"header\": …}, {\"event\": …} or {\"memory\": …}):\n"+
		"    imported losslessly into the stack, or into the cloud agent of the stack's id when the cloud is configured (unless --local),\n"+
		"    in requests of up to --chunk-bytes, each all or nothing; ids and provenance survive, and importing it again changes nothing;\n"+
		"  items shaped like POST /memories/batch ({type, content, tags?, created_at?, derived_from?}): new memories in the local stack\n"+
		"    (source import), every line checked before anything is written, 1000 per append.\n\n"+
		"Progress goes to stderr when it is a terminal.")
	localOnly := flags.Bool("local", false, "import an export into the local stack even when the cloud is configured")
	cloudOnly := flags.Bool("cloud", false, "import an export into the cloud agent of the stack's id")
	chunkBytes := flags.Int("chunk-bytes", importChunkBytes, "the most bytes one request of an export's import carries (keep it under the server's body limit)")
	pos, err := c.parse(flags, args, 1, 1)
	if err != nil {
		return err
	}
	if *chunkBytes < 1 {
		return usageErrorf("import: --chunk-bytes must be positive")
	}
	var in io.Reader = c.stdin
	var size int64
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return err
		}
		defer f.Close()
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
			size = info.Size()
		}
		in = f
	}
	buffered := bufio.NewReaderSize(in, 1<<20)
	if isTransferFile(buffered) {
		cl, err := c.transferCloud("import", *localOnly, *cloudOnly)
		if err != nil {
			return err
		}
		return c.transferImport(ctx, buffered, size, cl, *chunkBytes)
	}
	if *cloudOnly {
		return usageErrorf("import: --cloud takes an Engram export (engram export); a file of memory items is imported into the local stack")
	}
	items, err := readImport(buffered)
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
