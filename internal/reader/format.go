package reader

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// Write prints t as table, csv or json.
func Write(w io.Writer, t Table, format string) error {
	rw, err := NewRowWriter(w, t.Columns, format)
	if err != nil {
		return err
	}
	for _, r := range t.Rows {
		if err := rw.Row(r); err != nil {
			return err
		}
	}
	return rw.Close()
}

// RowWriter prints rows one at a time as table, csv or json; Close ends
// the output (a table is aligned and printed then).
type RowWriter struct {
	columns []string
	row     func([]any) error
	close   func() error
}

// NewRowWriter starts the output of columns to w in format.
func NewRowWriter(w io.Writer, columns []string, format string) (*RowWriter, error) {
	rw := &RowWriter{columns: columns}
	switch format {
	case "", "table":
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(columns, "\t"))
		rw.row = func(r []any) error {
			cells := make([]string, len(r))
			for i, v := range r {
				cells[i] = cell(columns[i], v)
				if sv, ok := v.(string); ok && ambiguous(sv) {
					cells[i] = strconv.QuoteToASCII(sv)
				}
			}
			_, err := fmt.Fprintln(tw, strings.Join(cells, "\t"))
			return err
		}
		rw.close = tw.Flush
	case "csv":
		// NULL is an empty field and an empty string a quoted one (""), as
		// DuckDB's and PostgreSQL's CSV write them: encoding/csv wrote both
		// as nothing, and a null lesson title read back as ''.
		bw := bufio.NewWriter(w)
		for i, c := range columns {
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString(csvField(c))
		}
		bw.WriteByte('\n')
		rw.row = func(r []any) error {
			for i, v := range r {
				if i > 0 {
					bw.WriteByte(',')
				}
				if v != nil {
					bw.WriteString(csvField(cell(columns[i], v)))
				}
			}
			return bw.WriteByte('\n')
		}
		rw.close = bw.Flush
	case "json":
		bw := bufio.NewWriter(w)
		enc := json.NewEncoder(bw)
		rw.row = func(r []any) error {
			obj := make(map[string]any, len(r))
			for i, v := range r {
				if tv, ok := v.(time.Time); ok {
					v = cell(columns[i], tv)
				}
				obj[columns[i]] = v
			}
			return enc.Encode(obj)
		}
		rw.close = bw.Flush
	default:
		return nil, fmt.Errorf("--format %q: want table, csv or json", format)
	}
	return rw, nil
}

// Row prints one row, its values in the columns' order.
func (rw *RowWriter) Row(r []any) error { return rw.row(r) }

// Close ends the output.
func (rw *RowWriter) Close() error { return rw.close() }

// csvField is s as one CSV field (RFC 4180): quoted, quotes doubled, when
// it holds a separator, a quote or a line break, starts with a space (as
// encoding/csv quotes), or is empty (the empty string, where an empty
// field is NULL).
func csvField(s string) string {
	if s != "" && !strings.ContainsAny(s, ",\"\r\n") && s[0] != ' ' && s[0] != '\t' {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// ambiguous reports whether a string printed bare in the table would read
// as something else: NULL, no value, a shorter key (trailing space), or
// other columns and rows (a tab, a newline). Such a string is printed
// quoted, as is one that starts with a quote, so quoting itself is
// unambiguous. csv and json need none of it: they are exact.
func ambiguous(s string) bool {
	if s == "" || s == "NULL" || s[0] == '"' || strings.TrimSpace(s) != s {
		return true
	}
	for _, r := range s {
		// A space other than ' ' and a combining mark (NFD "é" beside
		// NFC) are graphic but read as other keys; such a key is printed
		// with its non-ASCII escaped.
		if r != ' ' && (!unicode.IsGraphic(r) || unicode.IsSpace(r)) || unicode.Is(unicode.Mn, r) || r == utf8.RuneError {
			return true
		}
	}
	return false
}

// cell formats one value; the driver returns DATE and TIMESTAMP alike as
// time.Time, so the column name decides which one it is.
func cell(col string, v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case time.Time:
		if col == "event_date" {
			return x.UTC().Format("2006-01-02")
		}
		return x.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}
