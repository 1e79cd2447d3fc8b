package limiter

import (
	"reflect"
	"testing"
)

// groupBySlot keeps the order of first appearance, and the order within a
// group; keys sharing a hash tag share a group.
func TestGroupBySlot(t *testing.T) {
	keys := []string{"a{t1}x", "b{t2}", "c{t1}y", "d{t2}z", "e{t3}", "f{t1}"}
	got := groupBySlot(keys, func(k string) string { return k })
	want := [][]string{{"a{t1}x", "c{t1}y", "f{t1}"}, {"b{t2}", "d{t2}z"}, {"e{t3}"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groupBySlot(%q) = %q, want %q", keys, got, want)
	}
	if got := groupBySlot([]string(nil), func(k string) string { return k }); len(got) != 0 {
		t.Errorf("groupBySlot(nil) = %q, want no group", got)
	}
}
