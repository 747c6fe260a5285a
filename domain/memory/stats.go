package memory

// Stats counts what an agent holds. ByType counts every memory of each
// type, forgotten ones included (every type is present, zero or not);
// Forgotten and ForgottenByType count the forgotten ones alone; Weak
// counts the memories (not forgotten) that are weak or dormant now. Raw
// counts raw entries that are not forgotten by their processed flag.
// Suggestions counts suggestions by status.
type Stats struct {
	AgentID         string         `json:"agent_id"`
	Total           int            `json:"total"`
	ByType          map[Type]int   `json:"by_type"`
	Forgotten       int            `json:"forgotten"`
	ForgottenByType map[Type]int   `json:"forgotten_by_type"`
	Weak            int            `json:"weak"`
	Raw             RawStats       `json:"raw"`
	Suggestions     map[string]int `json:"suggestions"`
}

// RawStats splits the live (not forgotten) raw entries by View.Processed.
type RawStats struct {
	Processed   int `json:"processed"`
	Unprocessed int `json:"unprocessed"`
}
