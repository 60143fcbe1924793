// Package config reads the job's configuration: a Spark-style properties file
// (`key value`, `#` comments, a later line wins) merged with command-line
// flags, which always win, into one validated Job.
package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Properties is a parsed properties file. Keys keep the line they were last
// set on so errors can point at it.
type Properties struct {
	File string
	// pipe: the file is no regular file (a process substitution, a FIFO),
	// or is named through /dev or /proc (/dev/stdin), so it has no
	// directory a relative path could be taken from: its Dir is /dev/fd
	// or /dev, and a warehouse published there.
	pipe   bool
	values map[string]string
	lines  map[string]int
	order  []string
}

// ReadFile parses the properties file at path.
func ReadFile(path string) (*Properties, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	p, err := Parse(f, path)
	if err != nil {
		return nil, err
	}
	// /dev/stdin redirected from a file is a regular file, but its name's
	// directory is /dev all the same, where a warehouse then published.
	p.pipe = !fi.Mode().IsRegular() || devicePath(path)
	return p, nil
}

// devicePath says whether path names a file through /dev's or /proc's
// links to a descriptor (/dev/stdin, /dev/fd/3, /proc/self/fd/0), whose
// directory is none of the config's. A real directory under /dev (a config
// in /dev/shm/x) is a directory like any other.
func devicePath(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	dir := filepath.Dir(abs)
	return dir == "/dev" || dir == "/dev/fd" || strings.HasPrefix(abs, "/proc/")
}

// noDirectory refuses the relative path v in a config that is no regular
// file.
func (p *Properties) noDirectory(v string) error {
	return fmt.Errorf("relative path %q in a config read through a pipe or a device (/dev, /proc): it has no directory to take the path from; give an absolute path, or name the config by its own path", v)
}

// Parse reads properties from r; name is used in errors. The format is the
// subset of Spark's spark-defaults.conf that production configs use: one
// `key value` pair a line (whitespace, `=` or `:` separates), blank lines and
// lines starting with `#` or `!` ignored. A key given twice keeps the later
// value, as in Spark.
func Parse(r io.Reader, name string) (*Properties, error) {
	p := &Properties{File: name, values: map[string]string{}, lines: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 {
			// A byte order mark, as some Windows editors save UTF-8.
			line = strings.TrimPrefix(line, "\ufeff")
		}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		key, value := splitLine(line)
		if key == "" {
			return nil, fmt.Errorf("%s:%d: line has no key", name, n)
		}
		if _, seen := p.values[key]; !seen {
			p.order = append(p.order, key)
		}
		p.values[key] = value
		p.lines[key] = n
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: a line over 1 MiB (a config line is one key and its value): %w", name, n+1, err)
		}
		return nil, fmt.Errorf("read config %s: %w", name, err)
	}
	return p, nil
}

func splitLine(line string) (key, value string) {
	i := strings.IndexAny(line, " \t=:")
	if i < 0 {
		return line, ""
	}
	key = line[:i]
	rest := strings.TrimLeft(line[i:], " \t")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t")
	}
	return key, rest
}

// Get returns the value of key and whether it was set.
func (p *Properties) Get(key string) (string, bool) {
	if p == nil {
		return "", false
	}
	v, ok := p.values[key]
	return v, ok
}

// Keys returns the keys in the order they first appeared.
func (p *Properties) Keys() []string {
	if p == nil {
		return nil
	}
	return append([]string(nil), p.order...)
}

// where names the file and line a key came from, for error messages.
func (p *Properties) where(key string) string {
	if p == nil {
		return "flag"
	}
	if n, ok := p.lines[key]; ok {
		return fmt.Sprintf("%s:%d", p.File, n)
	}
	return p.File
}
