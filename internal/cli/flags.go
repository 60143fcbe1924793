package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
)

// EnvPrefix starts the variable of every flag: --job-id is ENGAGEMENT_JOB_ID.
const EnvPrefix = "ENGAGEMENT_"

// envAnnotation marks a flag whose value came from its variable.
const envAnnotation = "engagement_env"

// EnvName is the variable that sets flag name.
func EnvName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// noEnv are flags no variable sets: help and version are requests, not
// settings.
var noEnv = map[string]bool{"help": true, "version": true}

// emptyIsGiven are flags whose variable, set but empty, is the flag given
// empty, which the command refuses, not left out: an empty --date means
// every date, and a sensor whose ENGAGEMENT_DATE rendered empty would read
// "published" for a date that is not.
var emptyIsGiven = map[string]bool{"date": true}

// applyEnv sets every flag the command line left unset from its variable,
// if that is set and not empty (an exported empty variable reads as unset,
// but for emptyIsGiven). A value the flag refuses is a usage error naming
// the variable.
func applyEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || noEnv[f.Name] {
			return
		}
		name := EnvName(f.Name)
		v, ok := lookup(name)
		if !ok || v == "" && !emptyIsGiven[f.Name] {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = exitcode.UsageError(fmt.Errorf("%s=%q: %v", name, v, e))
			return
		}
		_ = fs.SetAnnotation(f.Name, envAnnotation, []string{name})
	})
	return err
}

// origin names where a command's flag values came from, for errors.
type origin struct{ fs *pflag.FlagSet }

// env is the variable that set flag, or "" when it did not.
func (o origin) env(flag string) string {
	if o.fs == nil {
		return ""
	}
	if f := o.fs.Lookup(flag); f != nil {
		if v := f.Annotations[envAnnotation]; len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// date reads an optional date flag: nil when it was left out, and an
// error when it was given empty. An empty --date "$D" (an unset variable in
// a sensor's script) would otherwise mean every date, and a sensor waiting
// on D would see "published". Its errors begin with prefix.
func (o origin) date(prefix, flag, value string) (*dates.Date, error) {
	// Spaces around it are no part of a date, as in publish's --dates.
	value = strings.TrimSpace(value)
	if value == "" {
		if o.fs != nil && o.fs.Changed(flag) {
			return nil, exitcode.UsageError(fmt.Errorf("%s%s is empty: give a date, or leave it out (unset) for every date", prefix, o.ref(flag)))
		}
		return nil, nil
	}
	d, err := dates.Parse(value)
	if err != nil {
		return nil, exitcode.UsageError(fmt.Errorf("%s%s: %w", prefix, o.ref(flag), err))
	}
	return &d, nil
}

// ref names flag as the user gave it: "--format" or "ENGAGEMENT_FORMAT".
func (o origin) ref(flag string) string {
	if v := o.env(flag); v != "" {
		return v
	}
	return "--" + flag
}

// wrap prefixes err with the variable when flag came from one, so an error
// that names only the value still says where to fix it.
func (o origin) wrap(flag string, err error) error {
	if v := o.env(flag); v != "" && err != nil {
		return exitcode.UsageError(fmt.Errorf("%s: %w", v, err))
	}
	return err
}

// flagError words pflag's refusals as one usage line naming the command,
// with the nearest flag for a misspelt one (cobra suggests commands only).
func flagError(c *cobra.Command, err error) error {
	var notExist *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	switch {
	case errors.As(err, &notExist) && notExist.GetSpecifiedShortnames() == "":
		name := notExist.GetSpecifiedName()
		return exitcode.UsageError(fmt.Errorf("%s: unknown flag --%s%s", c.Name(), name, didYouMean(c.Flags(), name)))
	case errors.As(err, &notExist):
		// -job-id: Go's flag package took one dash; pflag reads a run of
		// one-letter flags.
		name, _, _ := strings.Cut(notExist.GetSpecifiedShortnames(), "=")
		return exitcode.UsageError(fmt.Errorf("%s: unknown flag -%s%s", c.Name(), name, didYouMean(c.Flags(), name)))
	case errors.As(err, &invalid):
		return exitcode.UsageError(fmt.Errorf("%s: --%s %q: %v", c.Name(), invalid.GetFlag().Name, invalid.GetValue(), errors.Unwrap(invalid)))
	}
	return exitcode.UsageError(fmt.Errorf("%s: %w", c.Name(), err))
}

// didYouMean is "; did you mean --NAME?" for the flag of fs nearest to
// typed, or "" when none is near: within two edits, or typed is a prefix.
func didYouMean(fs *pflag.FlagSet, typed string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := config.EditDistance(strings.ToLower(typed), f.Name)
		if len(typed) >= 3 && strings.HasPrefix(f.Name, typed) && d > 1 {
			d = 1
		}
		if d < bestD || (d == bestD && f.Name < best) {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean --%s?", best)
}

// onceValue refuses a flag's second value on the command line. With the
// last one winning, `--dates A --dates B` would publish B alone and exit 0,
// and whoever wrote the line would take A for published too.
type onceValue struct {
	pflag.Value
	first *string
	list  bool // the flag takes a comma-separated list: say so
}

func (v *onceValue) Set(s string) error {
	switch {
	case v.first == nil:
	case v.Value.Type() == "bool":
		return errors.New("given twice: give it once")
	case v.list:
		return fmt.Errorf("given twice (first %q): give it once; a list is comma-separated", *v.first)
	default:
		return fmt.Errorf("given twice (first %q): give it once", *v.first)
	}
	v.first = &s
	return v.Value.Set(s)
}

// setOnce makes every flag of c and of its subcommands take one value.
func setOnce(c *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if _, ok := f.Value.(*onceValue); !ok {
			f.Value = &onceValue{Value: f.Value, list: strings.Contains(f.Usage, "comma-separated")}
		}
	}
	c.Flags().VisitAll(wrap)
	c.PersistentFlags().VisitAll(wrap)
	for _, sub := range c.Commands() {
		setOnce(sub)
	}
}

// decimal is an integer flag read in base 10 alone. pflag's own integer
// flags read a leading 0 as octal and 0x as hex: --to-generation 010
// rolled back to generation 8 and --retain-generations 010 kept 8, exit 0,
// while 09 was refused.
type decimal[T int | int64 | uint64] struct{ p *T }

func (d decimal[T]) String() string {
	if d.p == nil {
		return "0"
	}
	return fmt.Sprint(*d.p)
}

func (d decimal[T]) Set(s string) error {
	var v T
	var err error
	if unsigned[T]() { // gen's --seed
		var u uint64
		u, err = strconv.ParseUint(s, 10, 64)
		v = T(u)
	} else {
		var i int64
		i, err = strconv.ParseInt(s, 10, 64)
		if v = T(i); err == nil && int64(v) != i {
			err = strconv.ErrRange
		}
	}
	switch {
	case errors.Is(err, strconv.ErrRange):
		return errors.New("out of range")
	case err != nil:
		return errors.New("not a whole number in decimal digits")
	}
	*d.p = v
	return nil
}

func (d decimal[T]) Type() string {
	if unsigned[T]() {
		return "uint"
	}
	return "int"
}

// unsigned reports whether T is an unsigned integer type.
func unsigned[T int | int64 | uint64]() bool {
	zero := T(0)
	return zero-1 > zero
}

// decimalVar defines an integer flag that takes decimal digits only.
func decimalVar[T int | int64 | uint64](fs *pflag.FlagSet, p *T, name string, value T, usage string) {
	*p = value
	fs.Var(decimal[T]{p}, name, usage)
}
