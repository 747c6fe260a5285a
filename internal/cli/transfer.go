package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
)

// Limits of export and import on the command line.
const (
	// importChunkBytes is the most one import request carries: under the
	// server's default body limit (10 MiB) with room to spare.
	importChunkBytes = 4 << 20
	// transferTimeout bounds one export stream or one import request.
	transferTimeout = 6 * time.Hour
)

// transferCloud is the side an export or import works on, as search and
// mcp decide: the cloud when it is configured, unless --local; --cloud
// insists on it. nil means the local stack.
func (c *cli) transferCloud(what string, localOnly, cloudOnly bool) (*cloud, error) {
	if localOnly && cloudOnly {
		return nil, usageErrorf("%s: --local and --cloud exclude each other", what)
	}
	if localOnly {
		return nil, nil
	}
	cl, err := c.loadCloud()
	if err != nil {
		return nil, err
	}
	switch {
	case cl.configured():
		return cl, nil
	case cloudOnly:
		return nil, domain.Errorf(domain.KindUnauthorized, "--cloud: the cloud is not configured (set cloud.base_url and run engram auth login)")
	}
	return nil, nil
}

func exportCommand(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("export", "[--format events|memories] [--output FILE] [--local|--cloud]",
		"Export the stack as JSON Lines: a header line, then its events (the default: lossless, vectors and suggestions included; engram import brings it back, here or on another server) or, with --format memories, each memory's current state for other tools. The cloud agent of the stack's id is exported when the cloud is configured, unless --local. Progress goes to stderr when it is a terminal.")
	format := flags.String("format", commands.ExportEvents, "events (lossless) or memories (current state)")
	output := flags.String("output", "", "write to FILE instead of stdout")
	localOnly := flags.Bool("local", false, "export the local stack even when the cloud is configured")
	cloudOnly := flags.Bool("cloud", false, "export the cloud agent of the stack's id")
	if _, err := c.parse(flags, args, 0, 0); err != nil {
		return err
	}
	if *format != commands.ExportEvents && *format != commands.ExportMemories {
		return usageErrorf("export: --format is events or memories, not %q", *format)
	}
	cl, err := c.transferCloud("export", *localOnly, *cloudOnly)
	if err != nil {
		return err
	}
	out := c.stdout
	var file *os.File
	if *output != "" {
		if file, err = os.OpenFile(*output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
			return err
		}
		defer file.Close()
		out = file
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	lines := &lineCounter{w: bw, bar: c.progress("exported", 0).withUnit("lines")}
	side := "local"
	if cl != nil {
		side = "cloud"
		err = c.exportCloud(ctx, cl, *format, lines)
	} else {
		err = c.exportLocal(ctx, *format, lines)
	}
	lines.bar.finish()
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && file != nil {
		err = file.Close()
	}
	if cloudUnreachable(err) {
		return fmt.Errorf("%w: %v", errCloudUnreachable, err)
	}
	if err != nil {
		return err
	}
	if *output == "" {
		return nil // stdout is the export
	}
	if c.json {
		return c.printJSON(map[string]any{"stack": c.stackName(), "side": side, "format": *format, "lines": lines.n, "output": *output})
	}
	fmt.Fprintf(c.stdout, "exported %d lines of %s (%s) to %s\n", lines.n, c.stackName(), side, *output)
	return nil
}

// exportLocal writes the local stack's export; the bar's total is the
// stack's event count (the events form).
func (c *cli) exportLocal(ctx context.Context, format string, w *lineCounter) error {
	st, err := c.openStack(ctx, false, writeParts)
	if err != nil {
		return err
	}
	defer st.close()
	if format == commands.ExportEvents {
		if page, err := st.app.Sync.Pull(ctx, localUserID, st.name, 1<<62, 1); err == nil {
			w.bar.setTotal(int(page.Head) + 1)
		}
	}
	enc := newLineEncoder(w)
	return st.app.Transfer.Export(ctx, localUserID, st.name, format, "engram-cli:local/"+st.name, enc)
}

// exportCloud copies the cloud agent's export as the server streams it.
func (c *cli) exportCloud(ctx context.Context, cl *cloud, format string, w *lineCounter) error {
	api := cl.client(transferTimeout)
	if format == commands.ExportEvents {
		if page, err := api.PullEvents(ctx, c.stackName(), 1<<62, 1); err == nil {
			w.bar.setTotal(int(page.Head) + 1)
		}
	}
	body, err := api.ExportAgent(ctx, c.stackName(), format)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(w, body)
	return err
}

// lineCounter passes an export through, counting its lines for the bar.
type lineCounter struct {
	w   io.Writer
	bar *progress
	n   int
}

func (l *lineCounter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	l.n += bytes.Count(p[:n], []byte{'\n'})
	l.bar.update(l.n)
	return n, err
}

// newLineEncoder writes each export line as one JSON line to w.
func newLineEncoder(w io.Writer) func(commands.ExportLine) error {
	enc := json.NewEncoder(w)
	return func(l commands.ExportLine) error { return enc.Encode(l) }
}

// isTransferFile reports whether the first line of r (peeked, not read)
// is a line of an Engram export rather than an item of the raw-entry
// import ({type, content, …}).
func isTransferFile(r *bufio.Reader) bool {
	for n := 64; ; n *= 2 {
		peek, err := r.Peek(n)
		trimmed := bytes.TrimLeft(peek, " \t\r\n")
		if len(trimmed) >= 10 || err != nil {
			for _, prefix := range []string{`{"header"`, `{"event"`, `{"memory"`} {
				if bytes.HasPrefix(trimmed, []byte(prefix)) {
					return true
				}
			}
			return false
		}
	}
}

// transferImport imports an export into the stack (or the cloud agent of
// its id) in requests of up to chunkBytes, each all or nothing and each
// starting with the export's header; a repeated import changes nothing,
// so an interrupted one is simply run again.
func (c *cli) transferImport(ctx context.Context, in *bufio.Reader, size int64, cl *cloud, chunkBytes int) error {
	res := commands.ImportResult{}
	requests := 0
	bar := c.progress("imported", int(size)).withUnit("bytes")
	defer bar.finish()
	var send func(chunk []byte) (commands.ImportResult, error)
	side := "local"
	if cl != nil {
		side = "cloud"
		api := cl.client(transferTimeout)
		send = func(chunk []byte) (commands.ImportResult, error) {
			r, err := api.ImportAgent(ctx, c.stackName(), chunk)
			if err != nil {
				return commands.ImportResult{}, err
			}
			return commands.ImportResult(*r), nil
		}
	} else {
		st, err := c.openStack(ctx, true, writeParts)
		if err != nil {
			return err
		}
		defer st.close()
		send = func(chunk []byte) (commands.ImportResult, error) {
			header, lines, err := commands.ReadImport(bytes.NewReader(chunk))
			if err != nil {
				return commands.ImportResult{}, err
			}
			return st.app.Transfer.Import(ctx, st.meta(), st.name, header, lines)
		}
	}
	err := eachImportChunk(in, chunkBytes, func(chunk []byte, firstLine, read int) error {
		r, err := send(chunk)
		if err != nil {
			if requests > 0 {
				return fmt.Errorf("the request from line %d: %w (the %d requests before it were imported; run the import again to finish: what is in is skipped)", firstLine, err, requests)
			}
			return err
		}
		requests++
		res.Format = r.Format
		res.Appended += r.Appended
		res.Duplicates += r.Duplicates
		res.Skipped += r.Skipped
		res.Remapped += r.Remapped
		bar.update(read)
		return nil
	})
	bar.finish()
	if cloudUnreachable(err) {
		return fmt.Errorf("%w: %v", errCloudUnreachable, err)
	}
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"stack": c.stackName(), "side": side, "format": res.Format, "appended": res.Appended,
			"duplicates": res.Duplicates, "skipped": res.Skipped, "remapped": res.Remapped, "requests": requests})
	}
	fmt.Fprintf(c.stdout, "imported a %s export into %s (%s): %d events appended, %d already there, %d skipped, %d ids remapped, in %d requests\n",
		res.Format, c.stackName(), side, res.Appended, res.Duplicates, res.Skipped, res.Remapped, requests)
	return nil
}

// eachImportChunk reads an export line by line and calls fn with chunks of
// at most limit bytes (a longer line goes alone), each starting with the
// export's header when it has one, the 1-based line its first line is on,
// and the bytes read so far.
func eachImportChunk(r *bufio.Reader, limit int, fn func(chunk []byte, firstLine, read int) error) error {
	var header, chunk []byte
	line, first, read := 0, 0, 0
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		err := fn(append(bytes.Clone(header), chunk...), first, read)
		chunk = chunk[:0]
		return err
	}
	for {
		raw, err := r.ReadBytes('\n')
		if len(raw) > 0 {
			line++
			read += len(raw)
			text := bytes.TrimSpace(raw)
			switch {
			case len(text) == 0:
			case header == nil && line == 1 && bytes.HasPrefix(text, []byte(`{"header"`)):
				header = append(text, '\n')
			default:
				if len(chunk) > 0 && len(header)+len(chunk)+len(text)+1 > limit {
					if err := flush(); err != nil {
						return err
					}
				}
				if len(chunk) == 0 {
					first = line
				}
				chunk = append(append(chunk, text...), '\n')
			}
		}
		if errors.Is(err, io.EOF) {
			if first == 0 {
				return domain.Invalid("line", "nothing to import: the file has no events or memories")
			}
			return flush()
		}
		if err != nil {
			return fmt.Errorf("read the import: %w", err)
		}
	}
}
