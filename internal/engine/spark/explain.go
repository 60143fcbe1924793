package spark

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/techlearningpro/engagement/internal/engine"
)

// Join roles, as the marks in the explain output name them.
const (
	ManifestJoin   = "MANIFEST JOIN"
	EnrollmentJoin = "ENROLLMENT JOIN"
)

// PlanJoin is one join operator of Spark's formatted plan.
type PlanJoin struct {
	ID       string // the operator number, "(8)"
	Operator string // BroadcastHashJoin, SortMergeJoin, ShuffledHashJoin, ...
	LeftKeys string
	Role     string // ManifestJoin, EnrollmentJoin or ""
}

// Plan returns Spark's EXPLAIN FORMATTED text of the staging query.
func (e *Engine) Plan(ctx context.Context, spec engine.Spec) (string, error) {
	spec, err := absSpec(spec)
	if err != nil {
		return "", err
	}
	events, err := e.rawSource(ctx, spec)
	if err != nil {
		return "", err
	}
	rows, err := e.rows(ctx, "explain", "EXPLAIN FORMATTED "+factQuery(spec, events))
	if err != nil {
		return "", err
	}
	if len(rows) != 1 {
		return "", fmt.Errorf("spark %s: explain: %d rows, want one", e.remote, len(rows))
	}
	text, _ := rows[0].At(0).(string)
	return text, nil
}

var (
	detailHeader = regexp.MustCompile(`^\((\d+)\) (\w+)`)
	treeNode     = regexp.MustCompile(`(\w+)(?: \w+)* \((\d+)\)\s*$`)
)

// Joins lists the join operators of a formatted plan with their left keys
// and the role those keys give them: lesson_id is the manifest join,
// learner_key the enrollment join.
func Joins(plan string) []PlanJoin {
	var out []PlanJoin
	var cur *PlanJoin
	for _, line := range strings.Split(plan, "\n") {
		if m := detailHeader.FindStringSubmatch(line); m != nil {
			cur = nil
			if strings.HasSuffix(m[2], "Join") {
				out = append(out, PlanJoin{ID: "(" + m[1] + ")", Operator: m[2]})
				cur = &out[len(out)-1]
			}
			continue
		}
		if cur != nil && strings.HasPrefix(line, "Left keys") {
			cur.LeftKeys = line
			switch {
			case strings.Contains(line, "learner_key"):
				cur.Role = EnrollmentJoin
			case strings.Contains(line, "lesson_id"):
				cur.Role = ManifestJoin
			}
		}
	}
	return out
}

// Explain implements engine.Engine: Spark's EXPLAIN FORMATTED with the two
// joins marked in the operator tree and in their detail sections.
func (e *Engine) Explain(ctx context.Context, spec engine.Spec) (string, error) {
	plan, err := e.Plan(ctx, spec)
	if err != nil {
		return "", err
	}
	return mark(plan), nil
}

func mark(plan string) string {
	roles := map[string]PlanJoin{}
	for _, j := range Joins(plan) {
		if j.Role != "" {
			roles[j.ID] = j
		}
	}
	var b strings.Builder
	b.WriteString("engine: spark\nEXPLAIN FORMATTED of the staging query (the manifest is broadcast by hint; the enrollment join is a shuffle join by hint)\n\n")
	for _, line := range strings.Split(plan, "\n") {
		id := ""
		if m := detailHeader.FindStringSubmatch(line); m != nil {
			id = "(" + m[1] + ")"
		} else if m := treeNode.FindStringSubmatch(line); m != nil {
			id = "(" + m[2] + ")"
		}
		if j, ok := roles[id]; ok {
			kind := "shuffle"
			if strings.HasPrefix(j.Operator, "Broadcast") {
				kind = "broadcast"
			}
			line += fmt.Sprintf("   <== %s (%s, %s)", j.Role, j.Operator, kind)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
