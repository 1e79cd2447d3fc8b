package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// RedisServer is a throwaway redis-server on a free loopback port, for tests
// that stop or restart Redis. It is killed when the test ends.
type RedisServer struct {
	t    testing.TB
	Port int
	dir  string
	cmd  *exec.Cmd
	aof  bool // append-only file: data survives Shutdown and Start
}

// StartRedis starts a throwaway Redis (no persistence).
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		Unavailable(t, "redis-server is not installed")
	}
	s := &RedisServer{t: t, Port: FreePort(t), dir: t.TempDir()}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// StartRedisAOF starts a throwaway Redis that writes every command to an
// append-only file, so its data survives Shutdown and Start.
func StartRedisAOF(t testing.TB) *RedisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		Unavailable(t, "redis-server is not installed")
	}
	s := &RedisServer{t: t, Port: FreePort(t), dir: t.TempDir(), aof: true}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Addr is the server's host:port.
func (s *RedisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is the server's redis:// URL.
func (s *RedisServer) URL() string { return "redis://" + s.Addr() + "/0" }

// Start (re)starts the server on the same port and waits until it answers.
func (s *RedisServer) Start() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	aof := []string{"--appendonly", "no"}
	if s.aof {
		aof = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	args := append([]string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--save", "",
		"--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log")}, aof...)
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	s.cmd = cmd
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer: %v", s.Addr(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills the server (its data is gone).
func (s *RedisServer) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Shutdown stops the server gracefully (SIGTERM: an append-only file is
// flushed) and waits for it to exit.
func (s *RedisServer) Shutdown() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// PostgresServer is a throwaway PostgreSQL cluster in a temp dir, for tests
// that stop or restart the database. initdb refuses to run as root, so as
// root it runs as the "postgres" user.
type PostgresServer struct {
	t    testing.TB
	Port int
	bin  string
	dir  string
	asPG bool
}

// PostgresBinDir finds initdb/pg_ctl: TEST_PG_BIN, PATH, or the newest
// /usr/lib/postgresql/*/bin.
func PostgresBinDir() string {
	if d := os.Getenv("TEST_PG_BIN"); d != "" {
		return d
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	if len(dirs) == 0 {
		return ""
	}
	return dirs[len(dirs)-1]
}

// StartPostgres initialises and starts a throwaway PostgreSQL (~1s).
func StartPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	bin := PostgresBinDir()
	if bin == "" {
		Unavailable(t, "PostgreSQL server binaries (initdb, pg_ctl) are not installed")
	}
	base, err := os.MkdirTemp("", "edgekit-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s := &PostgresServer{t: t, Port: FreePort(t), bin: bin, dir: filepath.Join(base, "data"), asPG: os.Geteuid() == 0}
	if s.asPG {
		u, err := user.Lookup("postgres")
		if err != nil {
			Unavailable(t, "running as root and there is no 'postgres' user for initdb")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		_ = os.Chown(base, uid, gid)
	}
	t.Cleanup(func() {
		s.Stop()
		os.RemoveAll(base)
	})
	if out, err := s.run("initdb", "-D", s.dir, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.Start()
	return s
}

func (s *PostgresServer) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.asPG {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.CombinedOutput()
}

// DSN connects to the throwaway server's "postgres" database.
func (s *PostgresServer) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=3", s.Port)
}

// Start starts the server and waits until it accepts connections.
func (s *PostgresServer) Start() {
	s.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", s.Port, s.dir)
	if out, err := s.run("pg_ctl", "-D", s.dir, "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "30", "start"); err != nil {
		s.t.Fatalf("pg_ctl start: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.DSN())
		if err == nil {
			conn.Close(ctx)
			cancel()
			return
		}
		cancel()
		if time.Now().After(deadline) {
			s.t.Fatalf("postgres on %d did not answer: %v", s.Port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop shuts the server down immediately (connections are cut). The
// server runs with synchronous_commit off, so the last commits before an
// immediate stop may be lost, as after a crash of such a server.
func (s *PostgresServer) Stop() {
	_, _ = s.run("pg_ctl", "-D", s.dir, "-m", "immediate", "-w", "stop")
}

// Restart stops the server as an operator's restart does (fast shutdown:
// connections are cut, every committed transaction is kept) and starts
// it again.
func (s *PostgresServer) Restart() {
	s.t.Helper()
	_, _ = s.run("pg_ctl", "-D", s.dir, "-m", "fast", "-w", "stop")
	s.Start()
}

// Stall is a TCP server that accepts connections and never answers: the
// worst failure a client can meet. Its Addr is host:port.
type Stall struct {
	l net.Listener
}

// StartStall listens on a free loopback port until the test ends.
func StartStall(t testing.TB) *Stall {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Stall{l: l}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return s
}

// Addr is the stalling server's host:port.
func (s *Stall) Addr() string { return s.l.Addr().String() }
