package app

import "time"

// step times one part of an open for the start-up log: its wall time and
// the CPU time the process used meanwhile. On a loaded machine the wall
// time mostly measures the wait for a core; the CPU time is what the part
// costs (docs/benchmarks.md#restart).
type step struct {
	wall time.Time
	cpu  time.Duration
}

func startStep() step { return step{wall: time.Now(), cpu: processCPU()} }

// since is the step's wall and CPU time so far, rounded for the log.
func (s step) since() (took, cpu time.Duration) {
	return time.Since(s.wall).Round(time.Millisecond), (processCPU() - s.cpu).Round(time.Millisecond)
}
