package local

import (
	_ "embed"
	"fmt"
	"sync"
)

// DefaultModelName is the local model a server binds new agents to unless
// configured otherwise: the built-in GloVe SIF model, chosen by measurement
// on the LoCoMo dev split (docs/search.md#quality).
const DefaultModelName = "glove-sif-100"

// The committed glove-sif-100 model directory (written by `engram models
// import-glove`; licence in its NOTICE). The words and vectors are
// embedded as strings: they stay in the binary's read-only mapping, and
// the model reads them there without a copy.
var (
	//go:embed models/glove-sif-100/sif.json
	builtinSIFManifest []byte
	//go:embed models/glove-sif-100/words.txt
	builtinSIFWords string
	//go:embed models/glove-sif-100/vectors.f16
	builtinSIFVectors string
)

// builtinSIFModel opens the committed GloVe SIF model once per process:
// its manifest, with no row decoded and no word index built until texts
// use them (sifModel.row, sifModel.lookup). Every Provider shares it.
var builtinSIFModel = sync.OnceValues(func() (*sifModel, error) {
	m, err := openSIFModel(builtinSIFManifest, builtinSIFWords, builtinSIFVectors)
	if err != nil {
		return nil, fmt.Errorf("the built-in %s: %w", DefaultModelName, err)
	}
	return m, nil
})
