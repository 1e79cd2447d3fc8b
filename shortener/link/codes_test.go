package link

import (
	"math"
	"strings"
	"testing"
)

func TestBase62Alphabet(t *testing.T) {
	if len(Base62) != 62 {
		t.Fatalf("len(Base62) = %d, want 62", len(Base62))
	}
	seen := map[rune]bool{}
	for _, r := range Base62 {
		if seen[r] {
			t.Fatalf("Base62 repeats %q", r)
		}
		seen[r] = true
	}
	want := "0123456789" + "abcdefghijklmnopqrstuvwxyz" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	if Base62 != want {
		t.Errorf("Base62 = %q, want %q", Base62, want)
	}
}

func TestRandomCodeLengthAndAlphabet(t *testing.T) {
	for _, n := range []int{1, 2, 7, 8, 16, 64, 200} {
		for range 50 {
			c, err := RandomCode(n)
			if err != nil {
				t.Fatalf("RandomCode(%d): %v", n, err)
			}
			if len(c) != n || !ValidCode(c, n, n) {
				t.Fatalf("RandomCode(%d) = %q: want %d Base62 characters", n, c, n)
			}
		}
	}
	for _, n := range []int{0, -1} {
		if c, err := RandomCode(n); err == nil {
			t.Errorf("RandomCode(%d) = %q, want an error", n, c)
		}
	}
}

func TestRandomCodeDistinct(t *testing.T) {
	seen := make(map[string]bool, 20000)
	for range 20000 {
		c, err := RandomCode(7)
		if err != nil {
			t.Fatal(err)
		}
		if seen[c] {
			// 20000 draws from 62^7 = 3.5e12: a collision has probability ~6e-5.
			t.Fatalf("RandomCode(7) repeated %q", c)
		}
		seen[c] = true
	}
}

// TestRandomCodeDistribution checks every character and every position is
// roughly uniform, with a chi-square test loose enough never to flake
// (the 99.9999th percentile) yet failing a bias like a plain b%62.
func TestRandomCodeDistribution(t *testing.T) {
	const (
		n     = 8
		draws = 40000
	)
	var counts [n][62]int
	var total [62]int
	for range draws {
		c, err := RandomCode(n)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			d := strings.IndexByte(Base62, c[i])
			counts[i][d]++
			total[d]++
		}
	}
	chi := func(obs []int, sum int) float64 {
		exp := float64(sum) / 62
		var x float64
		for _, o := range obs {
			x += (float64(o) - exp) * (float64(o) - exp) / exp
		}
		return x
	}
	// 61 degrees of freedom: P(chi2 > 140) ~ 1e-8.
	const limit = 140
	if x := chi(total[:], n*draws); x > limit {
		t.Errorf("chi-square over all characters = %.1f, want <= %d (counts %v)", x, limit, total)
	}
	for i := range counts {
		if x := chi(counts[i][:], draws); x > limit {
			t.Errorf("chi-square at position %d = %.1f, want <= %d", i, x, limit)
		}
	}
	// A modulo bias (b%62 over 256 values) favours the first 8 characters
	// by 5/4: with 320,000 characters that stands out far beyond noise.
	var low, high int
	for d := range total {
		if d < 8 {
			low += total[d]
		} else {
			high += total[d]
		}
	}
	ratio := (float64(low) / 8) / (float64(high) / 54)
	if ratio > 1.05 || ratio < 0.95 {
		t.Errorf("first 8 characters drawn %.3f times as often as the rest, want ~1", ratio)
	}
}

func TestRandomCodeAllocs(t *testing.T) {
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := RandomCode(7); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("RandomCode(7) allocates %.1f times, want <= 2", allocs)
	}
}

func TestSequentialCode(t *testing.T) {
	tests := []struct {
		id   int64
		want string
	}{
		{0, "1000000"},
		{1, "1000001"},
		{61, "100000Z"},
		{62, "1000010"},
		{62*62*62*62*62*62*62 - 62*62*62*62*62*62 - 1, "ZZZZZZZ"},
		{62*62*62*62*62*62*62 - 62*62*62*62*62*62, "10000000"},
		{-1, ""},
		{math.MinInt64, ""},
	}
	for _, tt := range tests {
		if got := SequentialCode(tt.id); got != tt.want {
			t.Errorf("SequentialCode(%d) = %q, want %q", tt.id, got, tt.want)
		}
	}
	if c := SequentialCode(math.MaxInt64); len(c) != 11 || !ValidCode(c, 11, 11) {
		t.Errorf("SequentialCode(MaxInt64) = %q, want 11 Base62 characters", c)
	}
}

func TestSequentialCodeSevenCharacters(t *testing.T) {
	// Consecutive IDs give consecutive 7-character codes, increasing in
	// Base62 digit order.
	prev := ""
	for id := int64(1); id <= 5000; id++ {
		c := SequentialCode(id)
		if len(c) != 7 {
			t.Fatalf("SequentialCode(%d) = %q, want 7 characters", id, c)
		}
		if prev != "" && !base62Less(prev, c) {
			t.Fatalf("SequentialCode(%d) = %q is not after %q", id, c, prev)
		}
		prev = c
	}
}

func base62Less(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	for i := 0; i < len(a); i++ {
		if a[i] != b[i] {
			return strings.IndexByte(Base62, a[i]) < strings.IndexByte(Base62, b[i])
		}
	}
	return false
}

func TestSequentialIDRoundTrip(t *testing.T) {
	ids := []int64{0, 1, 2, 61, 62, 999, 1000, 1 << 20, 1 << 40, 62*62*62*62*62*62*62 - 62*62*62*62*62*62 - 1,
		62*62*62*62*62*62*62 - 62*62*62*62*62*62, math.MaxInt64 - 1, math.MaxInt64}
	for _, id := range ids {
		c := SequentialCode(id)
		got, ok := SequentialID(c)
		if !ok || got != id {
			t.Errorf("SequentialID(%q) = %d, %v, want %d, true", c, got, ok, id)
		}
	}
}

func TestSequentialIDRejects(t *testing.T) {
	for _, c := range []string{
		"", "abc", "100000", // too short
		"0ZZZZZZ",            // below the offset, and a leading zero
		"01000000",           // leading zero: not what SequentialCode writes
		"100-000",            // not Base62
		"1000000\x00",        // not Base62
		"ZZZZZZZZZZZ",        // above MaxInt64 + offset
		"zzzzzzzzzzzzzzzzzz", // far too long
	} {
		if id, ok := SequentialID(c); ok {
			t.Errorf("SequentialID(%q) = %d, true, want false", c, id)
		}
	}
}

func TestValidCode(t *testing.T) {
	tests := []struct {
		code     string
		min, max int
		want     bool
	}{
		{"abc1234", 7, 7, true},
		{"ABCxyz0", 1, 64, true},
		{"abc123", 7, 7, false},
		{"abc12345", 7, 7, false},
		{"abc_123", 1, 64, false},
		{"abc-123", 1, 64, false},
		{"abc 123", 1, 64, false},
		{"abcé12", 1, 64, false},
		{"", 0, 10, true},
		{"", 1, 10, false},
	}
	for _, tt := range tests {
		if got := ValidCode(tt.code, tt.min, tt.max); got != tt.want {
			t.Errorf("ValidCode(%q, %d, %d) = %v, want %v", tt.code, tt.min, tt.max, got, tt.want)
		}
	}
}

func TestValidLookupCode(t *testing.T) {
	tests := []struct {
		code string
		want bool
	}{
		{"a", true},
		{"abc1234", true},
		{"my-link_2024", true},
		{strings.Repeat("x", 64), true},
		{strings.Repeat("x", 65), false},
		{"", false},
		{"a/b", false},
		{"a.b", false},
		{"a%20b", false},
		{"a b", false},
		{"ä", false},
		{"api\n", false},
	}
	for _, tt := range tests {
		if got := ValidLookupCode(tt.code); got != tt.want {
			t.Errorf("ValidLookupCode(%q) = %v, want %v", tt.code, got, tt.want)
		}
	}
}

func TestValidCodeNoAllocs(t *testing.T) {
	code := "my-link_2024"
	allocs := testing.AllocsPerRun(100, func() {
		_ = ValidLookupCode(code)
		_ = ValidCode(code, 1, 64)
	})
	if allocs != 0 {
		t.Errorf("ValidLookupCode/ValidCode allocate %.1f times, want 0", allocs)
	}
}

func TestValidCustomCode(t *testing.T) {
	tests := []struct {
		code    string
		wantErr string // "" for valid
	}{
		{"abc", ""},
		{"My_Link-2024", ""},
		{strings.Repeat("a", 64), ""},
		{"ab", "3 to 64 characters long, got 2"},
		{"", "3 to 64 characters long, got 0"},
		{strings.Repeat("a", 65), "3 to 64 characters long, got 65"},
		{"abc/def", `'/' at byte 3`},
		{"abc def", `' ' at byte 3`},
		{"héllo", `'é' at byte 1`},
		{"abc.html", `'.' at byte 3`},
		{"a\x00bc", `'\x00' at byte 1`},
	}
	for _, tt := range tests {
		err := ValidCustomCode(tt.code)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ValidCustomCode(%q) = %v, want nil", tt.code, err)
		case tt.wantErr != "" && err == nil:
			t.Errorf("ValidCustomCode(%q) = nil, want an error containing %q", tt.code, tt.wantErr)
		case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
			t.Errorf("ValidCustomCode(%q) = %q, want it to contain %q", tt.code, err, tt.wantErr)
		}
		// Every valid custom code is accepted on the redirect path.
		if err == nil && !ValidLookupCode(tt.code) {
			t.Errorf("ValidLookupCode(%q) = false for a valid custom code", tt.code)
		}
	}
}

func FuzzSequentialCode(f *testing.F) {
	for _, id := range []int64{0, 1, 61, 62, 1000, 62*62*62*62*62*62*62 - 62*62*62*62*62*62, math.MaxInt64, -1} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id int64) {
		c := SequentialCode(id)
		if id < 0 {
			if c != "" {
				t.Fatalf("SequentialCode(%d) = %q, want \"\"", id, c)
			}
			return
		}
		if len(c) < 7 || !ValidCode(c, 7, 11) {
			t.Fatalf("SequentialCode(%d) = %q, want 7 to 11 Base62 characters", id, c)
		}
		if got, ok := SequentialID(c); !ok || got != id {
			t.Fatalf("SequentialID(%q) = %d, %v, want %d, true", c, got, ok, id)
		}
	})
}

func FuzzSequentialID(f *testing.F) {
	for _, c := range []string{"1000000", "ZZZZZZZ", "01000000", "ZZZZZZZZZZZ", "abc", "1000-00"} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, c string) {
		id, ok := SequentialID(c)
		if !ok {
			return
		}
		if id < 0 {
			t.Fatalf("SequentialID(%q) = %d, want a non-negative ID", c, id)
		}
		if back := SequentialCode(id); back != c {
			t.Fatalf("SequentialCode(SequentialID(%q)) = %q", c, back)
		}
	})
}

func FuzzValidCustomCode(f *testing.F) {
	for _, c := range []string{"abc", "my-link_1", "ab", "a/b", "héllo", strings.Repeat("z", 64), strings.Repeat("z", 65), "\xff\xfe"} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, c string) {
		err := ValidCustomCode(c)
		want := len(c) >= 3 && len(c) <= 64 && strings.Trim(c, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-") == ""
		if (err == nil) != want {
			t.Fatalf("ValidCustomCode(%q) = %v, want valid=%v", c, err, want)
		}
		if err == nil && !ValidLookupCode(c) {
			t.Fatalf("ValidLookupCode(%q) = false for a valid custom code", c)
		}
		if ValidLookupCode(c) != (len(c) >= 1 && len(c) <= 64 && strings.Trim(c, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-") == "") {
			t.Fatalf("ValidLookupCode(%q) disagrees with its definition", c)
		}
	})
}

func BenchmarkRandomCode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RandomCode(7); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidLookupCode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !ValidLookupCode("my-link_2024") {
			b.Fatal("rejected a valid code")
		}
	}
}

func BenchmarkSequentialCode(b *testing.B) {
	b.ReportAllocs()
	var id int64
	for b.Loop() {
		id++
		_ = SequentialCode(id)
	}
}
