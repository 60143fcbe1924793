package gc

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// judgeProbes judges the conditional-write probes (warehouse.ProbeRoot): a
// publish deletes its own a moment after writing it, so one older than
// MinAge was left by a publish killed between the two (or one not allowed
// to delete): nothing else would ever remove it.
func judgeProbes(ctx context.Context, o Options) ([]Verdict, error) {
	files, _, err := o.Bucket.ListDir(ctx, warehouse.ProbeRoot)
	if storage.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gc: list %s: %w", o.Bucket.Location().Join(warehouse.ProbeRoot), err)
	}
	var out []Verdict
	for _, f := range files {
		rel := warehouse.ProbeRoot + "/" + path.Base(f.Key)
		switch idle := o.Now.Sub(f.ModTime); {
		case f.Link:
			out = append(out, Verdict{Path: rel, Reason: "a symlink, never followed or deleted"})
		case idle < o.MinAge:
			out = append(out, Verdict{Path: rel, Reason: fmt.Sprintf("a conditional-write probe written %s ago, younger than --min-age %s: its publish may be running", idle.Round(time.Second), o.MinAge)})
		default:
			out = append(out, Verdict{Path: rel, Delete: true, Bytes: f.Size, Objects: []string{rel},
				Reason: fmt.Sprintf("a conditional-write probe a killed publish left (each deletes its own), idle over --min-age %s", o.MinAge)})
		}
	}
	return out, nil
}
