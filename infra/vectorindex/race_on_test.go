//go:build race

package vectorindex

// raceEnabled scales the big tests down: the race detector slows graph
// building about tenfold.
const raceEnabled = true
