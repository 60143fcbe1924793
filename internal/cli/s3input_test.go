package cli_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
)

// TestS3BadInput: each way an S3 location or the AWS setup can be wrong is
// one "engagement:" line naming the URL, exit 1 or 2, and nothing written
// to the warehouse or the inputs.
func TestS3BadInput(t *testing.T) {
	h := publishtest.Harness{Backend: publishtest.S3}
	fx := h.LoadFixture(t, "")
	inputs := publishtest.Hash(t, fx.In(), "")
	proxy := s3test.StartProxy(t)
	conditional := func(r s3test.Request) bool { return r.Method == "PUT" }
	noCreds := []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_PROFILE=", "AWS_SESSION_TOKEN=",
		"AWS_CONFIG_FILE=" + t.TempDir() + "/none", "AWS_SHARED_CREDENTIALS_FILE=" + t.TempDir() + "/none", "AWS_EC2_METADATA_DISABLED=true"}
	for _, tc := range []struct {
		name string
		env  []string
		rule func(s3test.Request) s3test.Fault
		// flag and url replace one location; "" keeps the fixture's. A
		// flag with no url names the fixture's location the error must name.
		flag, url string
		exit      int
		says      string
	}{
		{"malformed bucket name", nil, nil, "--warehouse", "s3://Not_A_Bucket/wh", 2, "not a valid S3 bucket name"},
		{"URL with a port", nil, nil, "--raw", "s3://bucket:9000/raw", 2, "without user or port"},
		{"unknown warehouse bucket", nil, nil, "--warehouse", "s3://no-such-bucket-engagement/wh", 2, `bucket "no-such-bucket-engagement" does not exist`},
		{"unknown input bucket", nil, nil, "--lessons", "s3://no-such-bucket-engagement/lessons", 2, `bucket "no-such-bucket-engagement" does not exist`},
		{"missing credentials", noCreds, nil, "", "", 2, "no usable AWS credentials"},
		{"refused credentials (403)", []string{"AWS_SECRET_ACCESS_KEY=not-the-secret"}, nil, "", "", 2, "access denied"},
		{"unknown access key", []string{"AWS_ACCESS_KEY_ID=NOSUCHKEYENGAGEMENT"}, nil, "", "", 2, "access denied"},
		{"another region's signature", []string{"AWS_REGION=eu-west-1"}, nil, "", "", 2, "check AWS_REGION"},
		{"no conditional writes (501)", proxy.Env(), func(r s3test.Request) s3test.Fault {
			if conditional(r) {
				return s3test.NotImplemented
			}
			return s3test.Pass
		}, "", "", 2, "does not implement"},
		{"If-None-Match ignored", proxy.Env(), func(r s3test.Request) s3test.Fault {
			if conditional(r) {
				return s3test.IgnoreConditions
			}
			return s3test.Pass
		}, "", "", 2, "ignores If-None-Match"},
		// Exit 1: a store fault, which a retry may not meet again.
		{"raw listing fails", proxy.Env(), func(r s3test.Request) s3test.Fault {
			if r.Method == "GET" && strings.Contains(r.Prefix, "/raw/ingest_date=") {
				return s3test.Status500
			}
			return s3test.Pass
		}, "--raw", "", 1, "ingest_date=2026-03-01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh := h.NewWarehouse(t)
			args := fx.Args(wh, "bad-s3", "2026-03-02", "2026-03-03")
			named := wh
			switch {
			case tc.flag != "" && tc.url == "": // the fixture's location, named in the error
				named = args[slices.Index(args, tc.flag)+1]
			case tc.flag != "":
				args[slices.Index(args, tc.flag)+1] = tc.url
				named = tc.url
			}
			if tc.rule != nil {
				proxy.SetRule(tc.rule)
				defer proxy.SetRule(func(s3test.Request) s3test.Fault { return s3test.Pass })
			}
			// Text logs: the error line as a person reads it.
			code, stdout, stderr := publishtest.Harness{}.Run(t, slices.Concat(tc.env, []string{"ENGAGEMENT_LOG_FORMAT=text"}), args...)
			var lines []string
			for _, l := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(l, "engagement: ") {
					lines = append(lines, l)
				}
			}
			if code != tc.exit || len(lines) != 1 {
				t.Fatalf("exit %d with %d error lines, want exit %d and one line\n%s", code, len(lines), tc.exit, stderr)
			}
			if !strings.Contains(lines[0], named) || !strings.Contains(lines[0], tc.says) {
				t.Errorf("error line %q does not name %s and say %q", lines[0], named, tc.says)
			}
			if u := repeatedURL(lines[0]); u != "" {
				t.Errorf("error line %q names %s twice", lines[0], u)
			}
			if strings.Contains(stdout, "published") {
				t.Errorf("stdout says published: %s", stdout)
			}
			objs, err := publishtest.Bucket(t, wh).List(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 0 {
				t.Errorf("the refused publish left %d objects in the warehouse, first %s", len(objs), objs[0].Key)
			}
			if publishtest.Hash(t, fx.In(), "") != inputs {
				t.Errorf("the inputs changed")
			}
		})
	}
}

// repeatedURL returns an s3:// URL that line names twice (a store error
// wrapped again by its caller), or "".
func repeatedURL(line string) string {
	seen := map[string]bool{}
	for _, w := range strings.Fields(line) {
		if !strings.HasPrefix(w, "s3://") {
			continue
		}
		w = strings.TrimRight(w, ":/,")
		if seen[w] {
			return w
		}
		seen[w] = true
	}
	return ""
}

// TestS3ConfigMistakes: an AWS profile that does not exist or a region that
// is no region name is the command's mistake for every command (exit 2),
// not a failure a retry may mend: status gave exit 1 for both, and a sensor
// retried it for hours. Each runs in a process of its own, as the AWS
// configuration is resolved once per process.
func TestS3ConfigMistakes(t *testing.T) {
	wh := publishtest.Harness{Backend: publishtest.S3}.NewWarehouse(t)
	for _, tc := range []struct {
		name string
		env  []string
		says string
	}{
		{"unknown profile", []string{"AWS_PROFILE=nosuch-engagement"}, "AWS configuration: failed to get shared config profile, nosuch-engagement"},
		{"malformed region", []string{"AWS_REGION=us east"}, `AWS region "us east"`},
	} {
		for _, args := range [][]string{
			{"status", "--warehouse", wh},
			{"read", "course_day", "--warehouse", wh},
			{"gc", "--warehouse", wh, "--dry-run"},
		} {
			t.Run(tc.name+"/"+args[0], func(t *testing.T) {
				code, _, stderr := publishtest.Harness{}.Run(t, tc.env, append(args, "--log-format", "text")...)
				if code != 2 || !strings.Contains(stderr, tc.says) {
					t.Errorf("exit %d, want 2 saying %q:\n%s", code, tc.says, stderr)
				}
			})
		}
	}
}
