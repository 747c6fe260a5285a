package projections

import (
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/domain/webhook"
)

// Events is the registry of the event types the projections read,
// composed from each domain package's list. The engine decodes each event
// it reads once with it and hands the decoded batch to every projection;
// a projection given events decoded by nobody (a test, a benchmark, a
// conformance suite driving a store) decodes them itself with its own.
func Events() *domain.EventRegistry {
	r, err := domain.NewEventRegistry(memory.Events(), agentsettings.Events(), processing.Events(), job.Events(), account.Events(), webhook.Events())
	if err != nil {
		// The lists are fixed at build time: TestEventsRegistersEveryDomainEventOnce fails first.
		panic(err)
	}
	return r
}
