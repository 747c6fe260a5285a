// Package testserver starts the real `engram serve` binary on a loopback
// port over a fresh data directory, and registers users through the public
// API by reading the verification mail from the outbox.
//
// It has two layers. Launch, Process and RegisterUser take a context and
// return errors, so a command such as engram-bench can use them; Start and
// Register wrap them for tests (t.Fatal on failure, cleanup on t.Cleanup).
// Tests build the binary once in TestMain with Build and pass its path in
// Options.Binary, the way cmd/engram's own end-to-end harness does.
package testserver
