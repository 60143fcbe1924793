package job

import (
	"fmt"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// Places are a job's warehouse and inputs as storage locations.
type Places struct {
	Warehouse, Raw, Lessons, Enrollments storage.Location
	// names are each place's name in an error, in the order above: its
	// flag, or the config key with where it was set (config.Job.Shown).
	names [4]string
}

func (l Places) all() []warehouse.Place {
	locs := []storage.Location{l.Warehouse, l.Raw, l.Lessons, l.Enrollments}
	out := make([]warehouse.Place, len(locs))
	for i, loc := range locs {
		out[i] = warehouse.Place{Name: l.names[i], Loc: loc}
	}
	return out
}

// placeFlags are the places' flags and config keys, in the order of Places.
var placeFlags = [4]struct{ flag, key string }{
	{"--warehouse", config.KeyWarehouse}, {"--raw", config.KeyRaw},
	{"--lessons", config.KeyLessons}, {"--enrollments", config.KeyEnrollments},
}

// Holding names the place (its flag and location) that holds the local
// path p, the warehouse first: a file the command would write there
// (a metrics or lineage file) would overwrite what readers follow or what
// the job reads. ok is false when no place holds it. A path that cannot
// be resolved (past the system's length limit, under a deep working
// directory) is the error: passed over, a file was written into raw
// through a link (review CW).
func (l Places) Holding(p string) (name string, loc storage.Location, ok bool, err error) {
	for _, f := range l.all() {
		if f.Loc == (storage.Location{}) {
			continue
		}
		in, err := warehouse.Holds(f.Loc, p)
		if err != nil {
			return "", storage.Location{}, false, fmt.Errorf("cannot tell whether it lies in %s %s: %w", f.Name, f.Loc, err)
		}
		if in {
			return f.Name, f.Loc, true, nil
		}
	}
	return "", storage.Location{}, false, nil
}

// Locations parses a job's paths and URLs in one place; a malformed one is
// a usage error naming its flag, or its key and where it was set. An empty
// warehouse (explain needs none) stays the zero location.
func Locations(job config.Job) (Places, error) {
	var l Places
	values := [4]string{job.Warehouse, job.Raw, job.Lessons, job.Enrollments}
	dsts := [4]*storage.Location{&l.Warehouse, &l.Raw, &l.Lessons, &l.Enrollments}
	for i, f := range placeFlags {
		l.names[i] = job.Shown(f.key, f.flag)
		if values[i] == "" {
			continue
		}
		loc, err := storage.Parse(values[i])
		if err != nil {
			return l, exitcode.UsageError(fmt.Errorf("%s: %w", l.names[i], err))
		}
		*dsts[i] = loc
	}
	return l, nil
}

func request(l Places, spec engine.Spec) inputs.Request {
	return inputs.Request{Raw: l.Raw, Lessons: l.Lessons, Enrollments: l.Enrollments, From: spec.IngestFrom, To: spec.IngestTo}
}

// OverlapRefused is why a publish of job would refuse its warehouse as
// overlapping an input (warehouse.Overlap), or nil; nil too with no
// warehouse given. explain, which writes nothing, warns with it, as it does
// for refused dates.
func OverlapRefused(job config.Job) error {
	if job.Warehouse == "" {
		return nil
	}
	locs, err := Locations(job)
	if err != nil {
		return err
	}
	return warehouse.Overlap(locs.all())
}
