package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// clickBatchBody is a body like a batch of n clicks'.
func clickBatchBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"click","timestamp":"2026-12-06T18:00:00Z","data":{"clicks":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"code":"bench01","at":"2026-12-06T18:00:00.%06dZ","bot":false,"device":"desktop","visitor":"%016x"}`, i, uint64(i)*0x9e3779b97f4a7c15)
	}
	b.WriteString("]}}")
	return []byte(b.String())
}

// TestStoredBodies: a large body is kept compressed and comes back as it
// was given, from Due and Messages; a small one, an incompressible one
// and one written before bodies were compressed come back too; a damaged
// one is an error naming its message, not a wrong body.
func TestStoredBodies(t *testing.T) {
	s, err := OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	now := time.Now().UTC()
	e := webhook.Endpoint{ID: webhook.NewEndpointID(), URL: "https://hooks.example/in", Types: []string{webhook.TypeClick},
		Keys: []webhook.Key{{Secret: webhook.NewSecret()}}, CreatedAt: now, UpdatedAt: now, Version: 1}
	if err := s.CreateEndpoint(ctx, e, link.EventCursor{}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := s.Lease(ctx, e.ID, "me", time.Minute); !ok || err != nil {
		t.Fatalf("lease: %v %v", ok, err)
	}
	random := make([]byte, 4096)
	_, _ = rand.Read(random)
	bodies := [][]byte{[]byte(`{"n":1}`), clickBatchBody(100), random, clickBatchBody(1000), clickBatchBody(8)}
	var msgs []webhook.Message
	for i, b := range bodies {
		msgs = append(msgs, webhook.Message{ID: webhook.NewID(now.Add(time.Duration(i) * time.Millisecond)), Type: webhook.TypeClick,
			At: now, Body: bytes.Clone(b), Events: 1, NextAt: now})
	}
	if err := s.Enqueue(ctx, e.ID, "me", msgs, link.EventCursor{}); err != nil {
		t.Fatal(err)
	}
	stored := func(id string) (v []byte) {
		_ = s.Db.View(func(tx *bolt.Tx) error { v = bytes.Clone(tx.Bucket(embeddedHookBodies).Get([]byte(id))); return nil })
		return v
	}
	if v := stored(msgs[1].ID); len(v) == 0 || v[0] != bodyS2Tag || len(v) > len(bodies[1])/3 {
		t.Errorf("a 100 clicks' body (%d bytes) is stored in %d bytes", len(bodies[1]), len(v))
	}
	if v := stored(msgs[0].ID); !bytes.Equal(v, bodies[0]) {
		t.Errorf("a small body is stored as %q", v)
	}
	check := func(from string, got []webhook.Message) {
		t.Helper()
		for _, m := range got {
			for i, want := range msgs {
				if m.ID == want.ID && !bytes.Equal(m.Body, bodies[i]) {
					t.Errorf("%s: body %d came back as %d bytes, not its %d", from, i, len(m.Body), len(bodies[i]))
				}
			}
		}
		if len(got) != len(msgs) {
			t.Errorf("%s: %d messages", from, len(got))
		}
	}
	due, err := s.Due(ctx, e.ID, now, 100)
	if err != nil {
		t.Fatal(err)
	}
	check("Due", due)
	list, err := s.Messages(ctx, e.ID, "", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	check("Messages", list)

	// Written before: the body as it was given, which reads as it is.
	put := func(v []byte) {
		if err := s.Db.Update(func(tx *bolt.Tx) error { return tx.Bucket(embeddedHookBodies).Put([]byte(msgs[3].ID), v) }); err != nil {
			t.Fatal(err)
		}
	}
	put(bodies[3])
	due, err = s.Due(ctx, e.ID, now, 100)
	if err != nil {
		t.Fatal(err)
	}
	check("Due, a body written before", due)
	for _, damaged := range [][]byte{{bodyS2Tag}, {bodyS2Tag, 0xff, 0xff, 0xff, 0xff, 0x7f}, append([]byte{bodyS2Tag}, random[:64]...)} {
		put(damaged)
		if _, err := s.Due(ctx, e.ID, now, 100); err == nil || !strings.Contains(err.Error(), msgs[3].ID) {
			t.Errorf("a damaged body %x: %v", damaged, err)
		}
	}
}

// FuzzPackedBodies: any body packs and unpacks to itself; any stored bytes
// unpack to an error or at most maxStoredBody bytes, never a panic.
func FuzzPackedBodies(f *testing.F) {
	f.Add(clickBatchBody(20))
	f.Add([]byte(`{"n":1}`))
	f.Add([]byte{bodyS2Tag, 0x80, 0x80, 0x80, 0x80, 0x08})
	f.Add(append([]byte{bodyS2Tag}, []byte("junk")...))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := newBodyPacker()
		defer p.release()
		packed := p.pack(b)
		if len(b) > 0 && b[0] == bodyS2Tag && len(b) < packBodiesFrom {
			// Never given: bodies are JSON, which starts otherwise. It
			// stays as it is, and reads as a compressed body would.
			packed = nil
		}
		if packed != nil {
			got, err := unpackBody(packed, newBytes)
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("%d bytes unpacked to %d bytes, %v", len(b), len(got), err)
			}
		}
		if got, err := unpackBody(b, newBytes); err == nil && len(got) > maxStoredBody {
			t.Fatalf("%d stored bytes unpacked to %d", len(b), len(got))
		}
	})
}
