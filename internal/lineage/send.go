package lineage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/techlearningpro/engagement/internal/redact"
)

// Marshal is the event as one line of JSON, newline included.
func Marshal(e Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", e.EventType, err)
	}
	return append(b, '\n'), nil
}

// AppendFile appends e to path as one line (JSON Lines), creating the file
// if needed. The line goes in one write on a file opened for appending, so
// runs that share the file never interleave inside a line; it is synced
// before AppendFile returns. A file whose last line has no end (a write
// cut short) gets one first.
func AppendFile(path string, e Event) error {
	b, err := Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("lineage file %s: %w", path, err)
	}
	// A write cut short (a full disk) left a line without its end; this
	// line would have been glued to it, and lost with it. Looked at apart,
	// at best: a shared file may be writable and not readable by the job.
	if cutShort(path) {
		b = append([]byte{'\n'}, b...)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("append to lineage file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync lineage file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close lineage file %s: %w", path, err)
	}
	return nil
}

// cutShort reports whether the file at path ends inside a line; false when
// it cannot be read.
func cutShort(path string) bool {
	r, err := os.Open(path)
	if err != nil {
		return false
	}
	defer r.Close()
	fi, err := r.Stat()
	if err != nil || fi.Size() == 0 {
		return false
	}
	last := make([]byte, 1)
	_, err = r.ReadAt(last, fi.Size()-1)
	return err == nil && last[0] != '\n'
}

// Post sends e to an OpenLineage HTTP endpoint (Marquez:
// http://host:5000/api/v1/lineage). Any answer but 2xx is an error quoting
// the start of the body.
func Post(ctx context.Context, c *http.Client, url string, e Event) error {
	b, err := Marshal(e)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("lineage endpoint %q: %w", redact.URL(url), redact.Error(err, url))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("post %s event to %s: %w", e.EventType, redact.URL(url), redact.Error(err, url))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post %s event to %s: %s: %s", e.EventType, redact.URL(url), resp.Status, redact.Text(string(bytes.TrimSpace(body)), url))
	}
	return nil
}
