package memory

import (
	"context"
	"slices"
	"strings"

	"github.com/engram-memory/engram/domain"
)

// provenanceRules says which types a memory of each type may be derived
// from, when its stack enforces provenance (the original system's rules:
// episodes and notes come from raw entries, beliefs from episodes or
// notes, and so on). Raw entries and playbooks need no source.
var provenanceRules = map[Type][]Type{
	Episode:      {RawEntry},
	Note:         {RawEntry},
	Belief:       {Episode, Note},
	Goal:         {Episode, Belief},
	Relationship: {Episode},
	Value:        {Belief},
	Drive:        {Episode, Belief},
}

// ProvenanceSources lists the types a memory of type t may be derived
// from under enforced provenance; nil means t needs no source.
func ProvenanceSources(t Type) []Type { return slices.Clone(provenanceRules[t]) }

// CheckProvenance enforces the rules for a new memory of type t citing
// refs: at least one source, each of an allowed type. field names the
// request field.
func CheckProvenance(field string, t Type, refs []Ref) error {
	allowed, ruled := provenanceRules[t]
	if !ruled {
		return nil
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	if len(refs) == 0 {
		return domain.Invalid(field, "this agent enforces provenance: a %s must be derived from at least one %s (derived_from: [\"%s:<id>\"])",
			t, strings.Join(names, " or "), allowed[0]).WithCode(CodeProvenanceViolation)
	}
	for i, r := range refs {
		if !slices.Contains(allowed, r.Type) {
			return domain.Invalid(field, "%s[%d]: a %s may be derived from %s only, not from a %s",
				field, i, t, strings.Join(names, " or "), r.Type).WithCode(CodeProvenanceViolation).WithDetail("index", i)
		}
	}
	return nil
}

// CodeProvenanceViolation is the error code of a memory that breaks its
// agent's provenance rules.
const CodeProvenanceViolation = "provenance_violation"

// Provenance tree limits.
const (
	DefaultProvenanceDepth = 10
	MaxProvenanceDepth     = 50
	// MaxProvenanceNodes bounds one tree: a lineage with many shared
	// ancestors would otherwise grow exponentially with depth.
	MaxProvenanceNodes = 2000
)

// ProvenanceNode is one memory in a provenance tree. Nodes are the next
// level: its sources (up) or what was derived from it (down). Cycle marks
// a memory already on the path from the root (not expanded again);
// Truncated marks a node whose next level was cut by the depth or node
// limit.
type ProvenanceNode struct {
	Type      Type              `json:"type"`
	ID        string            `json:"id"`
	Depth     int               `json:"depth"`
	Cycle     bool              `json:"cycle,omitempty"`
	Truncated bool              `json:"truncated,omitempty"`
	Nodes     []*ProvenanceNode `json:"nodes"`
}

// Neighbours returns, for each of ids, the memories one provenance step
// away (its sources, or its derivations) in a stable order.
type Neighbours func(ctx context.Context, ids []string) (map[string][]Ref, error)

// BuildProvenanceTree expands root level by level, up to depth levels, one
// Neighbours call per level; a read model answers each from its edge
// index, never by scanning memories. It never loops: a memory that is
// already on the path to the root is marked Cycle and not expanded.
func BuildProvenanceTree(ctx context.Context, root Ref, depth int, next Neighbours) (*ProvenanceNode, error) {
	type pending struct {
		node *ProvenanceNode
		path map[string]bool // ids from the root to node, node included
	}
	top := &ProvenanceNode{Type: root.Type, ID: root.ID, Nodes: []*ProvenanceNode{}}
	frontier := []pending{{top, map[string]bool{root.ID: true}}}
	count := 1
	for level := 1; len(frontier) > 0; level++ {
		ids := make([]string, 0, len(frontier))
		for _, p := range frontier {
			ids = append(ids, p.node.ID)
		}
		links, err := next(ctx, ids)
		if err != nil {
			return nil, err
		}
		if level > depth {
			for _, p := range frontier {
				p.node.Truncated = len(links[p.node.ID]) > 0
			}
			break
		}
		var nextFrontier []pending
		for _, p := range frontier {
			for _, r := range links[p.node.ID] {
				if count >= MaxProvenanceNodes {
					p.node.Truncated = true
					break
				}
				child := &ProvenanceNode{Type: r.Type, ID: r.ID, Depth: level, Nodes: []*ProvenanceNode{}}
				p.node.Nodes = append(p.node.Nodes, child)
				count++
				if p.path[r.ID] {
					child.Cycle = true
					continue
				}
				path := make(map[string]bool, len(p.path)+1)
				for id := range p.path {
					path[id] = true
				}
				path[r.ID] = true
				nextFrontier = append(nextFrontier, pending{child, path})
			}
		}
		frontier = nextFrontier
	}
	return top, nil
}
