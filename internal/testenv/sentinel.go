package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisNode is one redis-server process (a data node or a sentinel) on a
// loopback port, killed when the test ends.
type RedisNode struct {
	t    testing.TB
	Port int
	dir  string
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Addr is the process's host:port.
func (p *RedisNode) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.Port) }

// start launches the process and waits until it answers PING.
func (p *RedisNode) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return
	}
	cmd := exec.Command("redis-server", p.args...)
	cmd.Dir = p.dir
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("starting redis-server %v: %v", p.args, err)
	}
	p.cmd = cmd
	if err := waitPing(p.Addr(), 10*time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "redis.log"))
		p.t.Fatalf("redis on %s did not answer: %v\n%s", p.Addr(), err, log)
	}
}

func (p *RedisNode) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Kill stops the process at once (SIGKILL), like a crashed host.
func (p *RedisNode) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

func waitPing(addr string, within time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newRedisProc(t testing.TB, confLines ...string) *RedisNode {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		Unavailable(t, "redis-server is not installed")
	}
	p := &RedisNode{t: t, Port: FreePort(t), dir: t.TempDir()}
	conf := []string{
		"port " + strconv.Itoa(p.Port), "bind 127.0.0.1", `save ""`, "appendonly no",
		"dir " + p.dir, "logfile " + filepath.Join(p.dir, "redis.log"),
	}
	conf = append(conf, confLines...)
	path := filepath.Join(p.dir, "redis.conf")
	if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.args = []string{path}
	t.Cleanup(p.Kill)
	return p
}

// Sentinel is a monitored Redis: one primary, one replica and three
// sentinels on free loopback ports, for failover tests. Clients connect
// with the sentinel addresses and MasterName.
type Sentinel struct {
	t          testing.TB
	MasterName string
	Nodes      []*RedisNode // [0] starts as primary, [1] as its replica
	Sentinels  []*RedisNode
}

// StartSentinel starts the primary, its replica and three sentinels
// (quorum 2, down after 1s), and waits until the sentinels know the
// replica and each other.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	s := &Sentinel{t: t, MasterName: "m"}
	primary := newRedisProc(t)
	primary.start()
	replica := newRedisProc(t, "replicaof 127.0.0.1 "+strconv.Itoa(primary.Port))
	replica.start()
	s.Nodes = []*RedisNode{primary, replica}
	for range 3 {
		sp := newRedisProc(t,
			"sentinel monitor m 127.0.0.1 "+strconv.Itoa(primary.Port)+" 2",
			"sentinel down-after-milliseconds m 1000",
			"sentinel failover-timeout m 5000",
			"sentinel parallel-syncs m 1")
		sp.args = append(sp.args, "--sentinel")
		sp.start()
		s.Sentinels = append(s.Sentinels, sp)
	}
	s.waitReady(15 * time.Second)
	return s
}

// Addrs are the sentinels' host:port.
func (s *Sentinel) Addrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, sp := range s.Sentinels {
		out[i] = sp.Addr()
	}
	return out
}

// waitReady waits until every sentinel sees one replica and two other sentinels.
func (s *Sentinel) waitReady(within time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for _, sp := range s.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: sp.Addr()})
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			replicas, err1 := c.Replicas(ctx, s.MasterName).Result()
			sentinels, err2 := c.Sentinels(ctx, s.MasterName).Result()
			cancel()
			if err1 == nil && err2 == nil && len(replicas) >= 1 && len(sentinels) >= 2 && replicaUp(replicas) {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				s.t.Fatalf("sentinel %s not ready: replicas %v (%v), sentinels %d (%v)", sp.Addr(), replicas, err1, len(sentinels), err2)
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.Close()
	}
}

func replicaUp(replicas []map[string]string) bool {
	for _, r := range replicas {
		if !strings.Contains(r["flags"], "down") && !strings.Contains(r["flags"], "disconnected") &&
			r["master-link-status"] == "ok" {
			return true
		}
	}
	return false
}

// Primary asks a sentinel for the current primary's host:port.
func (s *Sentinel) Primary() string {
	s.t.Helper()
	addr, err := s.primaryOf(s.Sentinels[0])
	if err != nil {
		s.t.Fatalf("SENTINEL GET-MASTER-ADDR-BY-NAME: %v", err)
	}
	return addr
}

// primaryOf is the primary sentinel n names.
func (s *Sentinel) primaryOf(n *RedisNode) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	hp, err := c.GetMasterAddrByName(ctx, s.MasterName).Result()
	if err != nil {
		return "", err
	}
	return hp[0] + ":" + hp[1], nil
}

// agreed reports whether every sentinel names primary: a client asks
// whichever sentinel answers it first, and the others learn of a failover
// from the one that led it a moment later.
func (s *Sentinel) agreed(primary string) bool {
	for _, n := range s.Sentinels {
		if addr, err := s.primaryOf(n); err != nil || addr != primary {
			return false
		}
	}
	return true
}

// node returns the data node at addr.
func (s *Sentinel) node(addr string) *RedisNode {
	for _, n := range s.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	s.t.Fatalf("no node at %s", addr)
	return nil
}

// Failover runs SENTINEL FAILOVER and waits until every sentinel names a
// new primary that accepts writes; it returns the new primary's address.
func (s *Sentinel) Failover() string {
	s.t.Helper()
	old := s.Primary()
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[0].Addr()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Failover(ctx, s.MasterName).Err(); err != nil {
		s.t.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	return s.waitNewPrimary(old, 20*time.Second)
}

// KillPrimary kills the current primary and waits until the sentinels
// promote the replica and all name it; it returns the new primary's address. The old
// primary stays down until RestartNode.
func (s *Sentinel) KillPrimary() (killed, promoted string) {
	s.t.Helper()
	old := s.Primary()
	s.node(old).Kill()
	return old, s.waitNewPrimary(old, 30*time.Second)
}

// RestartNode starts a killed data node again (the sentinels make it a
// replica of the current primary).
func (s *Sentinel) RestartNode(addr string) { s.node(addr).start() }

func (s *Sentinel) waitNewPrimary(old string, within time.Duration) string {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		now := s.Primary()
		if now != old && s.agreed(now) {
			c := redis.NewClient(&redis.Options{Addr: now})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			role, err := c.Do(ctx, "ROLE").Slice()
			cancel()
			c.Close()
			if err == nil && len(role) > 0 && role[0] == "master" {
				return now
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no new primary within %v (still %s)", within, old)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Cluster is a Redis Cluster of masters with one replica each, started on
// free loopback ports (with free bus ports, port+10000) for failover tests.
type Cluster struct {
	t     testing.TB
	Nodes []*RedisNode
}

// StartCluster starts masters*2 nodes, creates the cluster with one
// replica per master, and waits until it is healthy with every replica in
// sync.
func StartCluster(t testing.TB, masters int) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		Unavailable(t, "redis-cli is not installed")
	}
	c := &Cluster{t: t}
	var addrs []string
	for range masters * 2 {
		var p *RedisNode
		for {
			p = newRedisProc(t, "cluster-enabled yes", "cluster-config-file nodes.conf",
				"cluster-node-timeout 1000", "cluster-replica-validity-factor 0")
			if portFree(p.Port + 10000) {
				break
			}
		}
		p.start()
		c.Nodes = append(c.Nodes, p)
		addrs = append(addrs, p.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitHealthy(30 * time.Second)
	return c
}

func portFree(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

// Addrs are every node's host:port (seeds for a cluster client).
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// waitHealthy waits until every live node reports cluster_state:ok and
// every master has a replica whose link is up.
func (c *Cluster) waitHealthy(within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := c.healthy()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("cluster not healthy within %v: %v", within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *Cluster) healthy() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	masters, linked := 0, 0
	for _, n := range c.Nodes {
		if !n.running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr()})
		info, err := cl.ClusterInfo(ctx).Result()
		if err == nil && !strings.Contains(info, "cluster_state:ok") {
			err = fmt.Errorf("%s: cluster_state not ok", n.Addr())
		}
		var repl string
		if err == nil {
			repl, err = cl.Info(ctx, "replication").Result()
		}
		cl.Close()
		if err != nil {
			return err
		}
		switch {
		case strings.Contains(repl, "role:master"):
			masters++
		case strings.Contains(repl, "master_link_status:up"):
			linked++
		}
	}
	if linked < masters {
		return fmt.Errorf("%d masters, %d replicas in sync", masters, linked)
	}
	return nil
}

// MasterOf returns the node serving key's slot as master, as the first
// live node answering CLUSTER SLOTS sees it, asking again for up to 10s
// (a loaded machine may starve the nodes for a moment).
func (c *Cluster) MasterOf(key string) *RedisNode {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := c.masterOf(key)
		if err == nil {
			return m
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("finding the master of %q: %v", key, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// masterOf is one try of MasterOf.
func (c *Cluster) masterOf(key string) (*RedisNode, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	lastErr := errors.New("no live node")
	for _, n := range c.Nodes {
		if !n.running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr()})
		slot, err := cl.ClusterKeySlot(ctx, key).Result()
		var slots []redis.ClusterSlot
		if err == nil {
			//lint:ignore SA1019 CLUSTER SHARDS needs Redis 7; CLUSTER SLOTS works on 6 too
			slots, err = cl.ClusterSlots(ctx).Result()
		}
		cl.Close()
		if err != nil {
			lastErr = err
			continue
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
				for _, m := range c.Nodes {
					if m.Addr() == s.Nodes[0].Addr {
						return m, nil
					}
				}
			}
		}
		lastErr = fmt.Errorf("no master for slot %d", slot)
	}
	return nil, lastErr
}

// KillMaster kills the master serving key and waits until its replica is
// promoted and the cluster is ok again.
func (c *Cluster) KillMaster(key string) {
	c.t.Helper()
	m := c.MasterOf(key)
	m.Kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if now := c.MasterOf(key); now != m {
			if err := c.okWithout(m); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no replica promoted within 30s after killing %s", m.Addr())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// RestartNode starts a killed node again and waits until the cluster is
// healthy with it (a killed master comes back as a replica of the node
// promoted in its place).
func (c *Cluster) RestartNode(n *RedisNode) {
	c.t.Helper()
	n.start()
	c.waitHealthy(30 * time.Second)
}

// okWithout: every live node but dead reports cluster_state:ok.
func (c *Cluster) okWithout(dead *RedisNode) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, n := range c.Nodes {
		if n == dead {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr()})
		info, err := cl.ClusterInfo(ctx).Result()
		cl.Close()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state not ok", n.Addr())
		}
	}
	return nil
}
