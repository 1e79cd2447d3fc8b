package shortener

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	goqr "github.com/piglig/go-qr"
)

// BenchmarkQRConcurrent2048 fires 100 concurrent requests for distinct
// 2048 px PNG QR codes (none cached: the worst case) and reports the
// process's peak RSS over its idle RSS (MB-rss-growth, from VmHWM after
// resetting it through /proc/self/clear_refs): "bounded" through the
// renderer, "unbounded" drawing each at once as every request did before
// it. Run one at a time, each in its own process:
//
//	go test -run '^$' -bench 'QRConcurrent2048/bounded' -benchtime 1x ./shortener/
//	go test -run '^$' -bench 'QRConcurrent2048/unbounded' -benchtime 1x ./shortener/
func BenchmarkQRConcurrent2048(b *testing.B) {
	const requests = 100
	req := qrRequest{format: "png", size: MaxQRSize, level: goqr.High}
	for _, mode := range []string{"bounded", "unbounded"} {
		b.Run(mode, func(b *testing.B) {
			var growth float64
			for n := range b.N {
				q := newQRRenderer(qrCacheBytes, qrMaxRenders)
				idle := resetPeakRSS(b)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range requests {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						text := fmt.Sprintf("https://sho.rt/%d-%d?_qr=1", n, i)
						var err error
						if mode == "bounded" {
							_, err = q.image(context.Background(), text, req)
						} else {
							_, err = qrDraw(text, req)
						}
						if err != nil {
							b.Error(err)
						}
					}()
				}
				close(start)
				wg.Wait()
				growth = max(growth, float64(procStatusKB(b, "VmHWM")-idle)/1024)
			}
			b.ReportMetric(growth, "MB-rss-growth")
		})
	}
}

// resetPeakRSS returns memory to the OS, resets the peak RSS and returns
// the idle RSS, in KiB.
func resetPeakRSS(b *testing.B) int64 {
	b.Helper()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("resetting the peak RSS needs Linux: %v", err)
	}
	return procStatusKB(b, "VmRSS")
}

// procStatusKB reads a field of /proc/self/status, in KiB.
func procStatusKB(b *testing.B, field string) int64 {
	b.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skipf("reading the RSS needs Linux: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
