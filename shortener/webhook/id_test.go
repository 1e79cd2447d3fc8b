package webhook

import (
	"sort"
	"strings"
	"testing"
	"time"
)

func TestNewIDFormat(t *testing.T) {
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	ids := make([]string, 0, 1000)
	seen := map[string]bool{}
	for i := range 1000 {
		id := NewID(now.Add(time.Duration(i) * time.Millisecond))
		if !ValidID(id) || !signableID(id) || len(id) != 30 || strings.Contains(id, ".") {
			t.Fatalf("NewID() = %q: not a valid id", id)
		}
		if seen[id] {
			t.Fatalf("NewID() = %q twice", id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	if !sort.StringsAreSorted(ids) {
		t.Error("ids made in later milliseconds do not sort after earlier ones")
	}
}

func TestValidIDRefuses(t *testing.T) {
	id := NewID(time.Now())
	for _, bad := range []string{
		"", "msg_", id[:len(id)-1], id + "0", "evt_" + id[4:], strings.ToUpper(id),
		id[:10] + "i" + id[11:], // i is not in Crockford's alphabet
		id[:len(id)-1] + "z",    // the last character's low bits must be zero
	} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}
