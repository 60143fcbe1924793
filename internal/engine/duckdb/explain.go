package duckdb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/techlearningpro/engagement/internal/engine"
)

// PlanNode is one operator of DuckDB's JSON plan.
type PlanNode struct {
	Name     string         `json:"name"`
	Children []*PlanNode    `json:"children"`
	Extra    map[string]any `json:"extra_info"`
}

// Role names what a plan node does for this job, so the plan can be marked.
type Role string

// Roles of the marked operators.
const (
	ManifestJoin   Role = "manifest join"
	EnrollmentJoin Role = "enrollment join"
	EventsScan     Role = "raw events"
	ManifestScan   Role = "lesson manifest pin"
	EnrollmentScan Role = "enrollment snapshot"
)

// Plan returns the physical plan of the staging query.
func (e *Engine) Plan(ctx context.Context, spec engine.Spec) (*PlanNode, error) {
	s, err := e.resolve(ctx, spec)
	if err != nil {
		return nil, err
	}
	var kind, text string
	err = e.asWritten(ctx, func() error {
		return e.conn.QueryRowContext(ctx, "EXPLAIN (FORMAT json) "+factQuery(spec, s)).Scan(&kind, &text)
	})
	if err != nil {
		return nil, fmt.Errorf("explain: %w", firstLine(err))
	}
	var roots []*PlanNode
	if err := json.Unmarshal([]byte(text), &roots); err != nil || len(roots) == 0 {
		return nil, fmt.Errorf("explain: unexpected plan format: %v", err)
	}
	return roots[0], nil
}

// RoleOf classifies a node by what it reads or joins on.
func RoleOf(n *PlanNode) Role {
	cond := extraText(n, "Conditions")
	switch {
	case strings.Contains(n.Name, "JOIN") && strings.Contains(cond, "learner_key"):
		return EnrollmentJoin
	case strings.Contains(n.Name, "JOIN") && strings.Contains(cond, "lesson_id"):
		return ManifestJoin
	}
	if !strings.Contains(n.Name, "SCAN") && !strings.Contains(n.Name, "READ_PARQUET") {
		return ""
	}
	all := extraText(n, "Projections") + " " + extraText(n, "Filters")
	switch {
	case strings.Contains(all, "manifest_id") || strings.Contains(all, "lesson_title"):
		return ManifestScan
	case strings.Contains(all, "snapshot_id"):
		return EnrollmentScan
	case strings.Contains(all, "event_time") || strings.Contains(all, sourceFileColumn):
		return EventsScan
	}
	return ""
}

// Find returns the first node with the role, depth first.
func (n *PlanNode) Find(r Role) *PlanNode {
	if RoleOf(n) == r {
		return n
	}
	for _, c := range n.Children {
		if f := c.Find(r); f != nil {
			return f
		}
	}
	return nil
}

// Contains reports whether the subtree holds a node with the role.
func (n *PlanNode) Contains(r Role) bool { return n.Find(r) != nil }

// Cardinality is the optimizer's estimate for the node, 0 if absent.
func (n *PlanNode) Cardinality() int64 {
	var c int64
	fmt.Sscan(extraText(n, "Estimated Cardinality"), &c)
	return c
}

func extraText(n *PlanNode, key string) string {
	switch v := n.Extra[key].(type) {
	case string:
		return v
	case []any:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, " AND ")
	}
	return ""
}

// Explain implements engine.Engine. DuckDB's hash join builds its table from
// the right child and probes with the left one, so the marks name the build
// side: at design volume the manifest and the enrollment snapshot must be
// built, and the events streamed past them.
func (e *Engine) Explain(ctx context.Context, spec engine.Spec) (string, error) {
	root, err := e.Plan(ctx, spec)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "engine: duckdb\nplan of the staging query (hash joins build the right child, probe with the left)\n\n")
	render(&b, root, 0)
	return b.String(), nil
}

func render(b *strings.Builder, n *PlanNode, depth int) {
	line := strings.Repeat("  ", depth) + n.Name
	if jt := extraText(n, "Join Type"); jt != "" {
		line += " " + jt
	}
	if c := extraText(n, "Conditions"); c != "" {
		line += " ON " + c
	}
	if f := extraText(n, "Filters"); f != "" && RoleOf(n) != EventsScan {
		line += " WHERE " + f
	}
	line += fmt.Sprintf("  (est. %d rows)", n.Cardinality())
	switch r := RoleOf(n); r {
	case ManifestJoin, EnrollmentJoin:
		build := "?"
		if len(n.Children) == 2 {
			build = string(sideRole(n.Children[1]))
		}
		line += fmt.Sprintf("   <== %s (build side: %s)", strings.ToUpper(string(r)), build)
	case "":
	default:
		line += "   <-- " + string(r)
	}
	b.WriteString(line + "\n")
	for _, c := range n.Children {
		render(b, c, depth+1)
	}
}

// sideRole names which input a join child carries.
func sideRole(n *PlanNode) Role {
	for _, r := range []Role{EventsScan, ManifestScan, EnrollmentScan} {
		if n.Contains(r) {
			return r
		}
	}
	return "?"
}

// BuildSide returns the input that the join with role r builds its hash table
// from, for tests and for the plan check.
func (n *PlanNode) BuildSide(r Role) Role {
	j := n.Find(r)
	if j == nil || len(j.Children) != 2 {
		return ""
	}
	return sideRole(j.Children[1])
}
