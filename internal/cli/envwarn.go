package cli

import (
	"log/slog"
	"slices"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/failpoint"
)

// strayEnv returns a warning for each ENGAGEMENT_* variable of environ
// that engagement does not read but that looks meant for it: within two
// edits of a flag's variable (ENGAGEMENT_WAREHOSE), or a config key's name
// (ENGAGEMENT_LATENESS_DAYS: engagement.latenessDays is no flag, so it has
// no variable). A misspelt config key is refused; a misspelt variable was
// ignored in silence, and the run used the config's warehouse. Other
// ENGAGEMENT_* names (the test scripts') are left alone.
func strayEnv(root *cobra.Command, environ []string) [][2]string {
	known := map[string]bool{failpoint.Env: true, failpoint.HoldEnv: true, failpoint.DelayEnv: true, duckdb.ExtensionsEnv: true}
	var flagVars []string
	var visit func(c *cobra.Command)
	add := func(f *pflag.Flag) {
		if v := EnvName(f.Name); !known[v] && !noEnv[f.Name] {
			known[v] = true
			flagVars = append(flagVars, v)
		}
	}
	visit = func(c *cobra.Command) {
		c.Flags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
	slices.Sort(flagVars)
	var out [][2]string
	environ = slices.Sorted(slices.Values(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if upper := strings.ToUpper(name); upper != name && strings.HasPrefix(upper, EnvPrefix) && slices.Contains(flagVars, upper) {
			// A variable's name is case-sensitive: engagement_warehouse
			// was ignored in silence.
			out = append(out, [2]string{name, "did you mean " + upper + "? (a variable's name is case-sensitive)"})
			continue
		}
		if !strings.HasPrefix(name, EnvPrefix) || known[name] {
			continue
		}
		if key := configKeyNamed(name); key != "" {
			if flag := flagOfKey(key); flag != "" {
				out = append(out, [2]string{name, key + " is set by --" + flag + ": did you mean " + EnvName(flag) + "?"})
			} else {
				out = append(out, [2]string{name, key + " has no variable (no flag sets it); set it in the config file"})
			}
			continue
		}
		// Two edits on a long name, one on a short one: ENGAGEMENT_TAG is
		// no misspelt ENGAGEMENT_RAW.
		suffix := strings.TrimPrefix(name, EnvPrefix)
		best, bestD := "", 2
		if len(suffix) >= 8 {
			bestD = 3
		}
		for _, v := range flagVars {
			if d := config.EditDistance(name, v); d < bestD {
				best, bestD = v, d
			}
		}
		if best != "" {
			out = append(out, [2]string{name, "did you mean " + best + "?"})
		}
	}
	return out
}

// configKeyNamed is the config key whose name the variable spells
// (ENGAGEMENT_LATENESS_DAYS: engagement.latenessDays), or "".
func configKeyNamed(name string) string {
	for _, k := range config.KnownKeys() {
		short, ok := strings.CutPrefix(k, "engagement.")
		if ok && EnvPrefix+snake(short) == name {
			return k
		}
	}
	return ""
}

// flagOfKey is the flag that sets config key key, or "".
func flagOfKey(key string) string {
	for _, fk := range flagKeys {
		if fk.key == key {
			return fk.flag
		}
	}
	return ""
}

// snake is camelCase as UPPER_SNAKE: latenessDays is LATENESS_DAYS.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// warnStrayEnv logs strayEnv's warnings.
func warnStrayEnv(root *cobra.Command, environ []string, log *slog.Logger) {
	for _, w := range strayEnv(root, environ) {
		log.Warn("a variable engagement does not read: "+w[1], "variable", w[0])
	}
}
