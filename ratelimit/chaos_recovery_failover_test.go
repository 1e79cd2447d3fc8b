package ratelimit

// The failover halves of the recovery scenario (chaos_recovery_test.go).

import (
	"fmt"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// TestChaosRecoverySentinelFailover: the primary killed under load; the
// crowd arrives as soon as the sentinels' new primary accepts writes.
func TestChaosRecoverySentinelFailover(t *testing.T) {
	chaosOnly(t)
	s := testenv.StartSentinel(t)
	a := s.Addrs()
	hs := recoveryHandlers(t, []redispool.Config{
		{Addresses: []string{a[0], a[1], a[2]}, MasterName: s.MasterName},
		{Addresses: []string{a[1], a[2], a[0]}, MasterName: s.MasterName},
		{Addresses: []string{a[2], a[0], a[1]}, MasterName: s.MasterName},
	}, "")
	stop := recoveryLoad(t, hs, 30)
	time.Sleep(300 * time.Millisecond)
	killed, promoted := s.KillPrimary() // returns once the new primary is a master
	answered := time.Now()
	stop()
	t.Logf("killed primary %s: primary now %s", killed, promoted)
	recoveryCrowdAfter(t, hs, "sentinel failover", answered)
}

// TestChaosRecoveryClusterNodeRestart: the master of the key's slot killed
// under load; the crowd arrives as soon as its replica is promoted, then
// again after the killed node is back (as a replica).
func TestChaosRecoveryClusterNodeRestart(t *testing.T) {
	chaosOnly(t)
	c := testenv.StartCluster(t, 3)
	a := c.Addrs()
	var cfgs []redispool.Config
	for i := range 3 {
		seeds := append(append([]string{}, a[i:]...), a[:i]...)
		cfgs = append(cfgs, redispool.Config{Addresses: seeds, Cluster: true})
	}
	hs := recoveryHandlers(t, cfgs, "{http.request.header.X-Tenant}")
	tenant := []string{"X-Tenant", "tenant-1"}
	stop := recoveryLoad(t, hs, 30, tenant...)
	time.Sleep(300 * time.Millisecond)
	m := c.MasterOf(limiter.StoreKey(hs[0].prefix, "recover", "tenant-1", "x"))
	c.KillMaster(limiter.StoreKey(hs[0].prefix, "recover", "tenant-1", "x"))
	answered := time.Now()
	stop()
	recoveryCrowdAfter(t, hs, "cluster master killed", answered, tenant...)
	c.RestartNode(m)
	recoveryCrowdAfter(t, hs, fmt.Sprintf("cluster node %s restarted", m.Addr()), time.Now(), tenant...)
}
