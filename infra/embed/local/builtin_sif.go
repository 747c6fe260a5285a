package local

import (
	"embed"
	"io/fs"
	"sync"
)

// DefaultModelName is the local model a server binds new agents to unless
// configured otherwise: the built-in GloVe SIF model, chosen by measurement
// on the LoCoMo dev split (docs/search.md#quality).
const DefaultModelName = "glove-sif-100"

// builtinSIFFiles is the committed glove-sif-100 model directory (written
// by `engram models import-glove`; licence in its NOTICE).
//
//go:embed models/glove-sif-100/sif.json models/glove-sif-100/words.txt models/glove-sif-100/vectors.f16
var builtinSIFFiles embed.FS

// builtinSIFModel loads the committed GloVe SIF model once per process
// (~150 ms of CPU and 20 MB); the model is immutable once loaded, so every
// Provider shares it.
var builtinSIFModel = sync.OnceValues(func() (*sifModel, error) {
	dir, err := fs.Sub(builtinSIFFiles, "models/glove-sif-100")
	if err != nil {
		return nil, err
	}
	return loadSIFModel(dir, "the built-in "+DefaultModelName)
})
