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
	shown, _ := split(s)
	return shown
}

// Text is text with every secret of the URL raw masked wherever it
// appears: an error a library built around the URL (the Pushgateway
// client's "while pushing to …", a *url.Error) names it in its own way.
func Text(text, raw string) string {
	_, secrets := split(raw)
	for _, secret := range secrets {
		text = strings.ReplaceAll(text, secret, Mask)
	}
	return text
}

// split is raw as URL shows it, and the secrets it masked, each as it
// appears in raw and decoded (a library may print either).
func split(raw string) (string, []string) {
	var secrets []string
	add := func(v string) {
		if v != "" && v != Mask {
			secrets = append(secrets, v)
			if esc := url.QueryEscape(v); esc != v {
				secrets = append(secrets, esc)
			}
		}
	}
	if strings.HasPrefix(strings.ToLower(raw), "sc://") {
		base, params, ok := strings.Cut(raw, "/;")
		if !ok {
			return raw, nil
		}
		parts := strings.Split(params, ";")
		for i, p := range parts {
			if k, v, ok := strings.Cut(p, "="); ok && strings.EqualFold(strings.TrimSpace(k), "token") {
				add(v)
				parts[i] = k + "=" + Mask
			}
		}
		return base + "/;" + strings.Join(parts, ";"), secrets
	}
	u, err := url.Parse(raw)
	if err != nil {
		if scheme, rest, ok := strings.Cut(raw, "://"); ok {
			add(rest)
			return scheme + "://" + Mask, secrets
		}
		return Mask, nil
	}
	if p, ok := u.User.Password(); ok {
		add(p)
		u.User = url.UserPassword(u.User.Username(), Mask)
	}
	if u.RawQuery != "" {
		q := u.Query()
		masked := false
		for k, vs := range q {
			if secretKey(k) {
				for _, v := range vs {
					add(v)
				}
				q[k], masked = []string{Mask}, true
			}
		}
		if masked {
			u.RawQuery = q.Encode()
		}
	}
	return u.String(), secrets
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

// Settings is a copy of an engine's settings with the value of every key
// whose name says it holds a secret masked (spark.hadoop.fs.s3a.secret.key),
// for a record written beside the data; nil stays nil.
func Settings(settings map[string]string) map[string]string {
	if settings == nil {
		return nil
	}
	out := make(map[string]string, len(settings))
	for k, v := range settings {
		if secretKey(k) {
			v = Mask
		}
		out[k] = v
	}
	return out
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
