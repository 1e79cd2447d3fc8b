package edgekit

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestLinkDomainCertificatesOnDemand checks the certificate acceptance of
// issue 37 against a real Caddy with on-demand TLS from its local CA and
// `permission shortener`: a name that is no link domain gets no
// certificate; a domain added through POST <api>/domains gets one on its
// first handshake, within 5 s of the API's answer, naming it and
// verifying against Caddy's root, in any case of the SNI; 20 handshakes
// for an unknown name are all refused, quickly; and a domain deleted
// before its first handshake gets no certificate.
func TestLinkDomainCertificatesOnDemand(t *testing.T) {
	dsn := testenv.Postgres(t)
	admin, port, tlsPort := testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)
	storage := t.TempDir() // Caddy's local CA and certificates, isolated
	const apiKey = "link-domains-tls-key-0123456789"
	tester := newCaddyTester(t, admin)
	tester.InitServer(fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[3]d
	skip_install_trust
	storage file_system %[4]q
	on_demand_tls {
		permission shortener {
			negative_ttl 1h
		}
	}
}

http://localhost:%[2]d {
	shortener {
		store postgres "%[5]s"
		api /api
		api_key %[6]s
	}
}

https:// {
	tls internal {
		on_demand
	}
	shortener {
		store postgres "%[5]s"
		api /api
		api_key %[6]s
	}
}
`, admin, port, tlsPort, storage, dsn, apiKey), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}

	// Caddy's local CA root, written when the pki app starts.
	rootFile := filepath.Join(storage, "pki", "authorities", "local", "root.crt")
	var rootPEM []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if rootPEM, err = os.ReadFile(rootFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no local CA root within 10s: %v", err)
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootPEM) {
		t.Fatalf("%s holds no PEM certificate", rootFile)
	}

	addr := fmt.Sprintf("127.0.0.1:%d", tlsPort)
	// handshake connects to Caddy's HTTPS port with name as SNI (as curl
	// --resolve name:port:127.0.0.1 does) and returns the verified chain
	// Caddy sent, leaf first.
	handshake := func(name string) ([]*x509.Certificate, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr,
			&tls.Config{ServerName: name, RootCAs: roots, MinVersion: tls.VersionTLS12})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		st := conn.ConnectionState()
		if len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
			return nil, errors.New("no verified chain")
		}
		return st.PeerCertificates, nil
	}
	api := func(method, path, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, fmt.Sprintf("http://localhost:%d/api%s", port, path), strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+apiKey)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s /api%s: %v", method, path, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Logf("%s /api%s: %d %s", method, path, res.StatusCode, strings.TrimSpace(string(b)))
		return res.StatusCode
	}

	// (1) A name that is no link domain gets no certificate.
	if chain, err := handshake("unknown.example.test"); err == nil {
		t.Fatalf("unknown.example.test got a certificate for %v; want the handshake refused", chain[0].DNSNames)
	} else {
		t.Logf("unknown.example.test refused: %v", err)
	}

	// (2) A domain added through the API gets its certificate on its first
	// handshake, within 5 s of the API's answer (the on-demand issuance
	// from the local CA, key generation included, is in that time).
	if code := api("POST", "/domains", `{"host":"go.example.test"}`); code != http.StatusCreated {
		t.Fatalf("POST /api/domains go.example.test: %d, want 201", code)
	}
	created := time.Now()
	chain, err := handshake("go.example.test")
	took := time.Since(created)
	if err != nil {
		t.Fatalf("go.example.test: first handshake after the POST failed (after %v): %v", took, err)
	}
	t.Logf("go.example.test: first certificate %v after the POST's answer", took)
	if took > 5*time.Second {
		t.Fatalf("go.example.test: first certificate %v after the POST, want within 5s", took)
	}
	leaf, intermediates := chain[0], x509.NewCertPool()
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	if !slices.Contains(leaf.DNSNames, "go.example.test") {
		t.Fatalf("go.example.test: leaf names %v", leaf.DNSNames)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "go.example.test",
		Intermediates: intermediates}); err != nil {
		t.Fatalf("go.example.test: leaf does not verify against the local root: %v", err)
	}
	upper, err := handshake("GO.Example.Test")
	if err != nil {
		t.Fatalf("GO.Example.Test (upper-case SNI): %v", err)
	}
	if !slices.Contains(upper[0].DNSNames, "go.example.test") {
		t.Fatalf("GO.Example.Test: leaf names %v", upper[0].DNSNames)
	}

	// (3) An unknown name is refused every time, and quickly: the store is
	// asked once, then the negative cache (negative_ttl 1h) answers. The
	// store lookups themselves are counted by TestPermission in
	// shortener/domains_api_test.go; PostgreSQL's statistics, from outside,
	// are cumulative and updated lazily, so here only the behaviour is
	// checked.
	start := time.Now()
	for i := range 20 {
		if chain, err := handshake("other.example.test"); err == nil {
			t.Fatalf("other.example.test handshake %d got a certificate for %v", i+1, chain[0].DNSNames)
		}
	}
	refused := time.Since(start)
	t.Logf("other.example.test: 20 handshakes refused in %v", refused)
	if refused > 2*time.Second {
		t.Fatalf("other.example.test: 20 refused handshakes took %v, want under 2s", refused)
	}

	// (4) Deleting domains. Caddy keeps a certificate it issued in memory
	// (expected); a domain deleted before its first handshake gets none.
	if code := api("DELETE", "/domains/go.example.test", ""); code != http.StatusNoContent {
		t.Fatalf("DELETE /api/domains/go.example.test: %d, want 204", code)
	}
	if code := api("POST", "/domains", `{"host":"late.example.test"}`); code != http.StatusCreated {
		t.Fatalf("POST /api/domains late.example.test: %d, want 201", code)
	}
	if code := api("DELETE", "/domains/late.example.test", ""); code != http.StatusNoContent {
		t.Fatalf("DELETE /api/domains/late.example.test: %d, want 204", code)
	}
	if chain, err := handshake("late.example.test"); err == nil {
		t.Fatalf("late.example.test, deleted, got a certificate for %v", chain[0].DNSNames)
	}
}
