package testenv

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// CommandCalls reads INFO commandstats of the server c talks to: calls
// per command, by lowercase name ("evalsha", "get"). Use a Redis of the
// test's own (StartRedis): every client of a shared one is counted.
func CommandCalls(t testing.TB, c redis.UniversalClient) map[string]int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		stats[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.Atoi(n)
	}
	return stats
}
