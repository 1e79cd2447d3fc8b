package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// specSecret and the message below are the Standard Webhooks reference
// libraries' test vector.
const specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestSignKnownVector(t *testing.T) {
	s, err := ParseSecret(specSecret)
	if err != nil {
		t.Fatal(err)
	}
	got := Sign(s, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	if got != want {
		t.Errorf("Sign() = %q, want %q", got, want)
	}
}

func TestHeaders(t *testing.T) {
	oldS, newS := NewSecret(), NewSecret()
	ts := time.Unix(1765000000, 0)
	body := []byte(`{"type":"link.created","timestamp":"2026-12-06T08:00:00Z","data":{}}`)
	h, err := Headers("msg_1", ts, body, newS, oldS)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"Webhook-Id": "msg_1", "Webhook-Timestamp": "1765000000", "Content-Type": "application/json",
		"Webhook-Signature": Sign(newS, "msg_1", ts, body) + " " + Sign(oldS, "msg_1", ts, body),
	} {
		if got := h.Values(name); len(got) != 1 || got[0] != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	for _, s := range []Secret{oldS, newS} {
		if err := Verify(h, body, ts.Add(time.Minute), s); err != nil {
			t.Errorf("Verify with one of the rotated secrets: %v", err)
		}
	}
}

func TestHeadersRefuses(t *testing.T) {
	s := NewSecret()
	for _, id := range []string{"", "msg.1", "msg 1", "msg\r\n1", "msg_é", strings.Repeat("a", 256)} {
		if _, err := Headers(id, time.Now(), nil, s); !errors.Is(err, ErrMessageID) {
			t.Errorf("Headers(%q) = %v, want ErrMessageID", id, err)
		}
	}
	if _, err := Headers("msg_1", time.Now(), nil); !errors.Is(err, ErrNoSecret) {
		t.Errorf("Headers without a secret = %v, want ErrNoSecret", err)
	}
	if _, err := Headers("msg_1", time.Now(), nil, Secret{}); !errors.Is(err, ErrNoSecret) {
		t.Errorf("Headers with a zero secret = %v, want ErrNoSecret", err)
	}
}

func TestVerify(t *testing.T) {
	s, other := NewSecret(), NewSecret()
	ts := time.Unix(1765000000, 0)
	body := []byte(`{"a":1}`)
	signed := func(edit func(h http.Header)) http.Header {
		h, err := Headers("msg_abc", ts, body, s)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(h)
		}
		return h
	}
	set := func(k, v string) func(http.Header) { return func(h http.Header) { h.Set(k, v) } }
	sig := Sign(s, "msg_abc", ts, body)
	for _, tc := range []struct {
		name    string
		h       http.Header
		body    string
		now     time.Time
		secrets []Secret
		want    error
	}{
		{"signed", signed(nil), string(body), ts, []Secret{s}, nil},
		{"5 min late", signed(nil), string(body), ts.Add(Tolerance), []Secret{s}, nil},
		{"5 min early", signed(nil), string(body), ts.Add(-Tolerance), []Secret{s}, nil},
		{"second of two secrets", signed(nil), string(body), ts, []Secret{other, s}, nil},
		{"among other versions", signed(set(HeaderSignature, "v1a,AAAA v1,bad "+sig)), string(body), ts, []Secret{s}, nil},
		{"too late", signed(nil), string(body), ts.Add(Tolerance + time.Second), []Secret{s}, ErrTimestamp},
		{"too early", signed(nil), string(body), ts.Add(-Tolerance - time.Second), []Secret{s}, ErrTimestamp},
		{"other secret", signed(nil), string(body), ts, []Secret{other}, ErrSignature},
		{"no secret", signed(nil), string(body), ts, nil, ErrSignature},
		{"body changed", signed(nil), `{"a":2}`, ts, []Secret{s}, ErrSignature},
		{"body re-serialized", signed(nil), `{"a": 1}`, ts, []Secret{s}, ErrSignature},
		{"id changed", signed(set(HeaderID, "msg_abd")), string(body), ts, []Secret{s}, ErrSignature},
		{"timestamp changed", signed(set(HeaderTimestamp, "1765000001")), string(body), ts, []Secret{s}, ErrSignature},
		{"timestamp with a sign", signed(set(HeaderTimestamp, "+1765000000")), string(body), ts, []Secret{s}, ErrTimestamp},
		{"timestamp with a zero", signed(set(HeaderTimestamp, "01765000000")), string(body), ts, []Secret{s}, ErrTimestamp},
		{"timestamp not a number", signed(set(HeaderTimestamp, "soon")), string(body), ts, []Secret{s}, ErrTimestamp},
		{"signature without version", signed(set(HeaderSignature, strings.TrimPrefix(sig, "v1,"))), string(body), ts, []Secret{s}, ErrSignature},
		{"signature as v1a", signed(set(HeaderSignature, "v1a,"+strings.TrimPrefix(sig, "v1,"))), string(body), ts, []Secret{s}, ErrSignature},
		{"no id", signed(func(h http.Header) { h.Del(HeaderID) }), string(body), ts, []Secret{s}, ErrMissingHeader},
		{"no timestamp", signed(func(h http.Header) { h.Del(HeaderTimestamp) }), string(body), ts, []Secret{s}, ErrMissingHeader},
		{"no signature", signed(func(h http.Header) { h.Del(HeaderSignature) }), string(body), ts, []Secret{s}, ErrMissingHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(tc.h, []byte(tc.body), tc.now, tc.secrets...); !errors.Is(err, tc.want) {
				t.Errorf("Verify() = %v, want %v", err, tc.want)
			}
		})
	}
}
