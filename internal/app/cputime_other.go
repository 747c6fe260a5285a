//go:build !unix

package app

import "time"

// processCPU is not measured here: the start-up steps log 0 CPU.
func processCPU() time.Duration { return 0 }
