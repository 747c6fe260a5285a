package domain

import (
	"context"
	"io"
)

// IndexSnapshot tags the image of an in-process index (a snapshot): every
// event up to Checkpoint, a position of the log, is in the image; EventID
// is the id of the log event at Checkpoint ("" at 0), so an image is
// never taken for another log's.
type IndexSnapshot struct {
	Checkpoint uint64
	EventID    string
}

// IndexSnapshots stores the images of in-process indexes in the data
// directory (infra/snapshot).
type IndexSnapshots interface {
	// SaveIndexSnapshot replaces the image of the index kind atomically:
	// image writes its body. A failure leaves the previous image.
	SaveIndexSnapshot(ctx context.Context, kind string, tag IndexSnapshot, image func(io.Writer) error) error
	// DeleteIndexSnapshot removes the image of the index kind (its state
	// is being rebuilt, which the image no longer reflects).
	DeleteIndexSnapshot(ctx context.Context, kind string) error
}
