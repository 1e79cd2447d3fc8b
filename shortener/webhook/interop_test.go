package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestStandardWebhooksInterop checks our signatures against the npm
// standardwebhooks package, run by node (e2e/webhook-verify.mjs): what
// Headers signs, with one secret or two during a rotation, it verifies;
// a tampered body, timestamp or id it refuses; what it signs, Verify
// accepts.
func TestStandardWebhooksInterop(t *testing.T) {
	node, dir := needStandardWebhooks(t)
	oldS, newS, other := NewSecret(), NewSecret(), NewSecret()
	now := time.Now()
	id := NewID(now)
	body := []byte(`{"type":"click","timestamp":"2026-12-06T08:00:00Z","data":{"code":"ab","country":"DE","ua":"Zürich ✓"}}`)
	hdr, err := Headers(id, now, body, newS, oldS)
	if err != nil {
		t.Fatal(err)
	}
	headersWith := func(key, value string) http.Header {
		h := hdr.Clone()
		h.Set(key, value)
		return h
	}
	oneSecret, _ := Headers(id, now, body, newS)
	tamperedTS := headersWith(HeaderTimestamp, hdr.Get(HeaderTimestamp)[:9]+string(hdr.Get(HeaderTimestamp)[9]^1))
	cases := []interopCase{
		{name: "one secret", op: "verify", secret: newS, headers: oneSecret, body: body, ok: true},
		{name: "rotated, the new secret", op: "verify", secret: newS, headers: hdr, body: body, ok: true},
		{name: "rotated, the old secret", op: "verify", secret: oldS, headers: hdr, body: body, ok: true},
		{name: "another secret", op: "verify", secret: other, headers: hdr, body: body},
		{name: "the rotated-out secret alone", op: "verify", secret: oldS, headers: oneSecret, body: body},
		{name: "body tampered", op: "verify", secret: newS, headers: hdr, body: append(bytes.Clone(body[:len(body)-2]), '0', '}')},
		{name: "body re-serialized", op: "verify", secret: newS, headers: hdr, body: append(bytes.Clone(body), '\n')},
		{name: "timestamp tampered", op: "verify", secret: newS, headers: tamperedTS, body: body},
		{name: "id tampered", op: "verify", secret: newS, headers: headersWith(HeaderID, NewID(now)), body: body},
		{name: "empty body", op: "verify", secret: newS, headers: mustHeaders(t, id, now, nil, newS), body: nil, ok: true},
		{name: "node signs", op: "sign", secret: newS, id: id, ts: now, body: body, ok: true},
	}
	results := runStandardWebhooks(t, node, dir, cases)
	for i, c := range cases {
		r := results[i]
		if r.OK != c.ok {
			t.Errorf("%s: standardwebhooks says ok=%v (%s), want %v", c.name, r.OK, r.Error, c.ok)
		}
		if c.op == "sign" && r.Signature != Sign(c.secret, c.id, c.ts, c.body) {
			t.Errorf("%s: standardwebhooks signs %q, we sign %q", c.name, r.Signature, Sign(c.secret, c.id, c.ts, c.body))
		}
	}
}

func mustHeaders(t *testing.T, id string, ts time.Time, body []byte, s ...Secret) http.Header {
	t.Helper()
	h, err := Headers(id, ts, body, s...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// interopCase is one case for e2e/webhook-verify.mjs and what it should say.
type interopCase struct {
	name, op string
	secret   Secret
	headers  http.Header
	id       string
	ts       time.Time
	body     []byte
	ok       bool
}

// MarshalJSON is the case as the script reads it.
func (c interopCase) MarshalJSON() ([]byte, error) {
	headers := map[string]string{}
	for _, k := range []string{HeaderID, HeaderTimestamp, HeaderSignature} {
		headers[k] = c.headers.Get(k)
	}
	return json.Marshal(map[string]any{
		"op": c.op, "secret": c.secret.Encode(), "headers": headers,
		"id": c.id, "timestamp": c.ts.Unix(), "body": base64.StdEncoding.EncodeToString(c.body),
	})
}

// interopResult is the script's answer to a case.
type interopResult struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error"`
	Signature string `json:"signature"`
}

// runStandardWebhooks runs the cases through the script.
func runStandardWebhooks(t *testing.T, node, dir string, cases []interopCase) []interopResult {
	t.Helper()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "webhook-verify.mjs"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node webhook-verify.mjs: %v\n%s", err, stderr.Bytes())
	}
	var results []interopResult
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(cases) {
		t.Fatalf("node webhook-verify.mjs answered %d results (%v): %s", len(results), err, out)
	}
	return results
}

// needStandardWebhooks finds node and the standardwebhooks package in
// e2e/node_modules: under CI=true a missing one fails the test, elsewhere
// it skips it with what to run.
func needStandardWebhooks(t *testing.T) (node, dir string) {
	t.Helper()
	dir, _ = filepath.Abs(filepath.Join("..", "..", "e2e"))
	node, err := exec.LookPath("node")
	if err != nil {
		err = errors.New("node is not installed")
	} else if _, serr := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks", "package.json")); serr != nil {
		err = errors.New("e2e/node_modules has no standardwebhooks")
	}
	if err == nil {
		return node, dir
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("standardwebhooks interop: %v (run scripts/browser.sh, or npm ci --prefix e2e)", err)
	}
	t.Skipf("standardwebhooks interop: %v: run scripts/browser.sh, or npm ci --prefix e2e", err)
	return "", ""
}
