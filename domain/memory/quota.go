package memory

import "github.com/engram-memory/engram/domain"

// Quotas bound what one user can store; a zero field is no limit.
// Forgotten memories count (they are kept); a purge or an agent delete
// frees what it removes.
type Quotas struct {
	MemoriesPerAgent int   // memories an agent keeps
	AgentsPerUser    int   // agents of a user
	TextBytesPerUser int64 // bytes of canonical content JSON over all the user's memories
}

// Default quotas of a server.
const (
	DefaultMemoriesPerAgent = 1_000_000
	DefaultAgentsPerUser    = 1_000
	DefaultTextBytesPerUser = 1 << 30
)

// Usage is what a user stores, as the quotas count it.
type Usage struct {
	Agents    int
	TextBytes int64
}

// Quota error codes.
const (
	CodeQuotaMemoriesPerAgent = "quota_memories_per_agent"
	CodeQuotaAgents           = "quota_agents"
	CodeQuotaTextBytes        = "quota_text_bytes"
)

// CheckMemories refuses a write that would leave the agent with more than
// its quota of memories: stored now, adding more.
func (q Quotas) CheckMemories(agentID string, stored, adding int) error {
	if q.MemoriesPerAgent <= 0 || stored+adding <= q.MemoriesPerAgent {
		return nil
	}
	return quotaError(CodeQuotaMemoriesPerAgent, int64(q.MemoriesPerAgent), int64(stored), int64(adding),
		"agent %s holds %d memories; adding %d would exceed the quota of %d memories per agent (purge memories or delete an agent to free it)",
		agentID, stored, adding, q.MemoriesPerAgent)
}

// CheckAgents refuses creating an agent beyond the user's quota.
func (q Quotas) CheckAgents(agents int) error {
	if q.AgentsPerUser <= 0 || agents+1 <= q.AgentsPerUser {
		return nil
	}
	return quotaError(CodeQuotaAgents, int64(q.AgentsPerUser), int64(agents), 1,
		"you have %d agents, the quota; delete an agent to create another", agents)
}

// CheckTextBytes refuses growing the user's stored content beyond quota.
func (q Quotas) CheckTextBytes(used, adding int64) error {
	if q.TextBytesPerUser <= 0 || adding <= 0 || used+adding <= q.TextBytesPerUser {
		return nil
	}
	return quotaError(CodeQuotaTextBytes, q.TextBytesPerUser, used, adding,
		"your memories hold %d bytes of content; adding %d would exceed the quota of %d bytes (purge memories or delete an agent to free it)",
		used, adding, q.TextBytesPerUser)
}

func quotaError(code string, limit, used, adding int64, format string, args ...any) error {
	e := domain.Errorf(domain.KindQuotaExceeded, format, args...).WithCode(code)
	return e.WithDetail("limit", limit).WithDetail("used", used).WithDetail("requested", adding)
}
