// Package testserver starts the real `engram serve` binary on a loopback
// port over a fresh data directory, and registers users through the public
// API by reading the verification mail from the outbox.
//
// It has two layers. Launch, Process and RegisterUser take a context and
// return errors, so a command such as engram-bench can use them; Start and
// Register wrap them for tests (t.Fatal on failure, cleanup on t.Cleanup).
// Every test uses one binary (Binary): the one `make test` builds and names
// in ENGRAM_TEST_BINARY, or else one built once per source tree into the
// user's cache directory, without the race detector unless ENGRAM_TEST_RACE
// is 1. A server that reports a data race fails its test. The servers run in a hermetic
// environment (Environ): the user's ENGRAM_*, OPENAI_* and ~/.engram never
// reach them.
package testserver
