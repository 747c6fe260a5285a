package projections

import (
	"sync"

	"github.com/ThreeDotsLabs/watermill"
)

// routerLog is the watermill router's logger, closed once the engine
// stops. A router handler's goroutine logs "Subscriber stopped" after it
// has told the router it is done, so a log call can still arrive after
// Router.Close returns; nothing of a stopped engine may write to the
// caller's log (it may be gone, or read by a test). close waits for a
// call in progress and drops every later one.
type routerLog struct {
	gate   *logGate
	logger watermill.LoggerAdapter
}

type logGate struct {
	mu     sync.RWMutex
	closed bool
}

func newRouterLog(logger watermill.LoggerAdapter) routerLog {
	return routerLog{gate: &logGate{}, logger: logger}
}

// close drops every log call after it, once the calls in progress are done.
func (l routerLog) close() {
	l.gate.mu.Lock()
	l.gate.closed = true
	l.gate.mu.Unlock()
}

// open runs log unless the log is closed.
func (l routerLog) open(log func()) {
	l.gate.mu.RLock()
	defer l.gate.mu.RUnlock()
	if !l.gate.closed {
		log()
	}
}

func (l routerLog) Error(msg string, err error, fields watermill.LogFields) {
	l.open(func() { l.logger.Error(msg, err, fields) })
}

func (l routerLog) Info(msg string, fields watermill.LogFields) {
	l.open(func() { l.logger.Info(msg, fields) })
}

func (l routerLog) Debug(msg string, fields watermill.LogFields) {
	l.open(func() { l.logger.Debug(msg, fields) })
}

func (l routerLog) Trace(msg string, fields watermill.LogFields) {
	l.open(func() { l.logger.Trace(msg, fields) })
}

func (l routerLog) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return routerLog{gate: l.gate, logger: l.logger.With(fields)}
}
