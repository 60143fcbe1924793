// Package redact takes the secrets out of a URL before it is written
// anywhere: a log line, an error (which reaches the result document, an
// Airflow XCom and OpenLineage's errorMessage), a metric.
package redact

import (
	"net/url"
	"regexp"
	"strings"
	"unicode"
)

// Mask replaces every secret.
const Mask = "xxxxx"

// minSecret is the shortest secret Text and Error mask in free text.
const minSecret = 4

// URL is s with its secrets masked: a password in its user info (or a
// user name given alone, a token's form), the value of every query parameter whose name says it holds one (api_key,
// token, sig, …), and for a Spark Connect URL (sc://HOST:PORT/;token=…;
// user_id=…) the token. A string that does not parse as a URL is
// returned with everything after its scheme masked: it may hold either. One
// that names no host (a mistyped scheme) keeps what is not secret, with a
// password before an '@', the query's secrets and every token= masked.
func URL(s string) string {
	shown, _ := split(s)
	return shown
}

// Text is text with every secret of the URL raw masked wherever it
// appears: an error a library built around the URL (the Pushgateway
// client's "while pushing to …", a *url.Error) names it in its own way.
func Text(text, raw string) string {
	shown, secrets := split(raw)
	// The URL as given first, whatever its secrets' length, and as Go's
	// net/http prints it (its password as ***, the rest as parsed); then
	// each secret alone, as a library may print it decoded or in parts.
	if raw != "" {
		text = strings.ReplaceAll(text, raw, shown)
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			printed := u.String()
			if _, ok := u.User.Password(); ok {
				printed = strings.Replace(printed, u.User.String()+"@", u.User.Username()+":***@", 1)
			}
			text = strings.ReplaceAll(text, printed, shown)
		}
	}
	return maskAll(text, secrets)
}

func maskAll(text string, secrets []string) string {
	for _, secret := range secrets {
		text = strings.ReplaceAll(text, secret, Mask)
	}
	return text
}

// Value is an engine setting's value as an error or a record may show it:
// masked when the key's name says it holds a secret
// (spark.hadoop.fs.s3a.secret.key), else as given.
func Value(key, v string) string {
	if secretKey(key) && v != "" {
		return Mask
	}
	return v
}

// SettingError is err with the value v of setting key masked in its text
// when the key's name says it holds a secret: a server's or an engine's
// refusal may quote the value it refused.
func SettingError(err error, key, v string) error {
	if err == nil || !secretKey(key) || v == "" {
		return err
	}
	return &masked{text: strings.ReplaceAll(err.Error(), v, Mask), err: err}
}

// split is raw as URL shows it, and the secrets it masked, each as it
// appears in raw and decoded (a library may print either).
func split(raw string) (string, []string) {
	var secrets []string
	add := func(v string) {
		// Masked in the URL whatever its length; in a library's error
		// text, a secret of a few characters would blank out every
		// occurrence of them ("rpc" -> "rxxxxxc"), hiding the error.
		if len(v) >= minSecret && v != Mask {
			secrets = append(secrets, v)
			if esc := url.QueryEscape(v); esc != v {
				secrets = append(secrets, esc)
			}
		}
	}
	if strings.HasPrefix(strings.ToLower(raw), "sc://") {
		base, params, ok := strings.Cut(raw, "/;")
		base = maskUserPassword(base, add)
		if !ok {
			// Malformed (sc://h:p;token=…, sc://h:p/?token=…): whatever
			// follows a token= is still the token.
			return maskTokens(base, add), secrets
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
	if u.Host == "" || !strings.Contains(raw, "://") {
		// Parsed, but no URL of a server: a typo in the scheme (sc:/h/;token=…,
		// http:/user:pw@h) parses as a scheme and a path, with no user info
		// or query to mask, and the secret went out whole. What would be a
		// password before an '@', and every token=, are masked; the rest
		// is shown as given (host:port, a path with a stray space), since
		// the refusal is about it.
		// The '@' first, over the whole string: a password may hold '?'.
		shown := raw
		if at := strings.LastIndex(shown, "@"); at >= 0 {
			if i := strings.Index(shown, ":"); i >= 0 && i < at {
				add(shown[i+1 : at])
				shown = shown[:i+1] + Mask + shown[at:]
			}
		}
		if head, query, ok := strings.Cut(shown, "?"); ok {
			shown = head + "?" + maskQuery(query, add)
		}
		return maskTokens(shown, add), secrets
	}
	if p, ok := u.User.Password(); ok {
		add(p)
		// As written too: a library may print the URL as given, and an
		// escape Go would not write (%2f, %20) is not QueryEscape's.
		if _, rest, ok := strings.Cut(raw, "://"); ok {
			if userinfo, _, ok := strings.Cut(rest, "@"); ok {
				if _, pw, ok := strings.Cut(userinfo, ":"); ok {
					add(pw)
				}
			}
		}
		u.User = url.UserPassword(u.User.Username(), Mask)
	} else if u.User != nil && u.User.Username() != "" {
		// A user name with no password is how a token is given
		// (https://TOKEN@host, GitHub's and many gateways' form): shown,
		// it went out whole. A plain name is masked too; the host says
		// where.
		addUser(u.User.Username(), add)
		if _, rest, ok := strings.Cut(raw, "://"); ok {
			if userinfo, _, ok := strings.Cut(rest, "@"); ok && userinfo != u.User.Username() {
				addUser(userinfo, add)
			}
		}
		u.User = url.User(Mask)
	}
	if u.RawQuery != "" {
		u.RawQuery = maskQuery(u.RawQuery, add)
	}
	// A Spark Connect URL under another scheme (ssc://h/;token=…, a typo)
	// still carries its token in the path.
	return maskTokens(u.String(), add), secrets
}

// addUser hands add a user name given without a password: as "name@",
// which is how free text names it in a URL, and bare only when it looks
// like a token (long, letters and digits): a plain name (lineage, admin)
// masked wherever it stood blanked the host and the path of every error
// naming the URL.
func addUser(name string, add func(string)) {
	if name == "" {
		return
	}
	add(name + "@")
	if len(name) >= 16 && strings.ContainsAny(name, "0123456789") && strings.IndexFunc(name, unicode.IsLetter) >= 0 {
		add(name)
	}
}

// maskQuery masks the value of every parameter of a query whose name says
// it holds a secret, passing each to add. By hand, keeping each separator:
// url.Values drops a pair that holds a ';', which then went out unmasked. A
// secret's value runs to the next '&', a ';' in it included; a ';' before
// it parts pairs as older servers took it.
func maskQuery(query string, add func(string)) string {
	segments := strings.Split(query, "&")
	for i, seg := range segments {
		parts := strings.Split(seg, ";")
		for j, part := range parts {
			k, _, ok := strings.Cut(part, "=")
			name, err := url.QueryUnescape(k)
			if err != nil {
				name = k
			}
			if !ok || !secretKey(name) {
				continue
			}
			value := strings.Join(parts[j:], ";")[len(k)+1:]
			first, _, _ := strings.Cut(value, ";")
			for _, v := range []string{value, first} {
				add(v)
				if dv, err := url.QueryUnescape(v); err == nil {
					add(dv)
				}
			}
			segments[i] = strings.Join(append(parts[:j:j], k+"="+Mask), ";")
			break
		}
	}
	return strings.Join(segments, "&")
}

// maskTokens masks the value of every token= in s, passing each to add.
func maskTokens(s string, add func(string)) string {
	return scToken.ReplaceAllStringFunc(s, func(m string) string {
		k, v, _ := strings.Cut(m, "=")
		add(v)
		return k + "=" + Mask
	})
}

// scToken is a token= parameter wherever it stands in a Spark Connect URL.
var scToken = regexp.MustCompile(`(?i)token=[^;&/?#\s]*`)

// secretKey reports a query parameter whose name says it holds a secret.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	// connection_string: Azure's carries an AccountKey= (DuckDB's
	// azure_storage_connection_string).
	for _, w := range []string{"key", "token", "secret", "sig", "pass", "auth", "credential", "connection_string"} {
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
		out[k] = Value(k, v)
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

// maskUserPassword masks the password of an sc:// URL's user info
// (sc://user:pw@h:p), which Spark Connect does not take but a user may
// write: it went out whole in the connect error.
func maskUserPassword(scURL string, add func(string)) string {
	head, rest, ok := strings.Cut(scURL, "://")
	if !ok {
		return scURL
	}
	// The last '@': a password may hold '@' or '/', as net/url takes it.
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return scURL
	}
	user, pw, ok := strings.Cut(rest[:at], ":")
	if !ok {
		// A user name alone is how a token is given (https://TOKEN@host).
		addUser(user, add)
		return head + "://" + Mask + rest[at:]
	}
	add(pw)
	return head + "://" + user + ":" + Mask + rest[at:]
}
