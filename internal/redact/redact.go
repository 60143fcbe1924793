// Package redact takes the secrets out of a URL before it is written
// anywhere: a log line, an error (which reaches the result document, an
// Airflow XCom and OpenLineage's errorMessage), a metric.
package redact

import (
	"net/url"
	"strings"
)

// Mask replaces every secret.
const Mask = "xxxxx"

// URL is s with its secrets masked: a password in its user info and the
// value of every query parameter whose name says it holds one (api_key,
// token, sig, …), and for a Spark Connect URL (sc://HOST:PORT/;token=…;
// user_id=…) the token. A string that does not parse as a URL is
// returned with everything after its scheme masked: it may hold either.
func URL(s string) string {
	if strings.HasPrefix(strings.ToLower(s), "sc://") {
		return sparkConnect(s)
	}
	u, err := url.Parse(s)
	if err != nil {
		if i := strings.Index(s, "://"); i >= 0 {
			return s[:i+3] + Mask
		}
		return Mask
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), Mask)
	}
	if u.RawQuery != "" {
		q := u.Query()
		masked := false
		for k := range q {
			if secretKey(k) {
				q[k], masked = []string{Mask}, true
			}
		}
		if masked {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// sparkConnect masks the token parameter of sc://HOST:PORT/;k=v;k=v.
func sparkConnect(s string) string {
	base, params, ok := strings.Cut(s, "/;")
	if !ok {
		return s
	}
	parts := strings.Split(params, ";")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok && strings.EqualFold(strings.TrimSpace(k), "token") {
			parts[i] = k + "=" + Mask
		}
	}
	return base + "/;" + strings.Join(parts, ";")
}

// Text is text with every secret of the URL raw masked wherever it
// appears: an error a library built around the URL (the Pushgateway
// client's "while pushing to …", a *url.Error) names it in its own way.
func Text(text, raw string) string {
	for _, secret := range secrets(raw) {
		text = strings.ReplaceAll(text, secret, Mask)
	}
	return text
}

// secrets are the values URL masks in raw, as they appear in it and
// decoded.
func secrets(raw string) []string {
	var out []string
	add := func(v string) {
		if v != "" && v != Mask {
			out = append(out, v)
			if esc := url.QueryEscape(v); esc != v {
				out = append(out, esc)
			}
		}
	}
	if strings.HasPrefix(strings.ToLower(raw), "sc://") {
		if _, params, ok := strings.Cut(raw, "/;"); ok {
			for _, p := range strings.Split(params, ";") {
				if k, v, ok := strings.Cut(p, "="); ok && strings.EqualFold(strings.TrimSpace(k), "token") {
					add(v)
				}
			}
		}
		return out
	}
	u, err := url.Parse(raw)
	if err != nil {
		if _, rest, ok := strings.Cut(raw, "://"); ok {
			add(rest)
		}
		return out
	}
	if p, ok := u.User.Password(); ok {
		add(p)
	}
	for k, vs := range u.Query() {
		if secretKey(k) {
			for _, v := range vs {
				add(v)
			}
		}
	}
	return out
}

// secretKey reports a query parameter whose name says it holds a secret.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"key", "token", "secret", "sig", "pass", "auth", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Error is err with the secrets of the URL raw masked in its text; errors.Is
// and errors.As still see err.
func Error(err error, raw string) error {
	if err == nil {
		return nil
	}
	return &masked{text: Text(err.Error(), raw), err: err}
}

type masked struct {
	text string
	err  error
}

func (m *masked) Error() string { return m.text }
func (m *masked) Unwrap() error { return m.err }
