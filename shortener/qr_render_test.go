package shortener

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goqr "github.com/piglig/go-qr"
)

// TestQRRendersCachedAndBounded: 300 concurrent requests for 10 distinct
// 2048 px images draw each image once (the others are served from the
// cache, also those that waited while it was drawn), never more than the
// renderer's slots at once, and all get the image qrDraw draws; a request
// whose deadline passes while every slot is taken gets the 503 answer.
func TestQRRendersCachedAndBounded(t *testing.T) {
	const slots, images, requests = 2, 10, 300
	q := newQRRenderer(qrCacheBytes, slots)
	var inFlight, most, draws atomic.Int64
	q.draw = func(text string, req qrRequest) ([]byte, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		draws.Add(1)
		return qrDraw(text, req)
	}
	reqOf := func(i int) (string, qrRequest) {
		return fmt.Sprintf("https://sho.rt/code%d?_qr=1", i%images), qrRequest{format: "png", size: MaxQRSize, level: goqr.Medium}
	}
	want := make([][]byte, images)
	for i := range want {
		text, req := reqOf(i)
		b, err := qrDraw(text, req)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = b
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, requests)
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			text, req := reqOf(i)
			b, err := q.image(context.Background(), text, req)
			switch {
			case err != nil:
				errs <- err
			case !bytes.Equal(b, want[i%images]):
				errs <- fmt.Errorf("request %d: not the image of %s", i, text)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := draws.Load(); got != images {
		t.Errorf("%d requests for %d images drew %d, want %d", requests, images, got, images)
	}
	if got := most.Load(); got > slots {
		t.Errorf("%d images drawn at once, want at most %d", got, slots)
	}

	for range slots { // every slot taken
		q.slots <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	text, req := reqOf(images) // not cached: a new size
	req.size = MinQRSize
	if _, err := q.image(ctx, text, req); !errors.Is(err, errQRBusy) {
		t.Errorf("no slot free before the deadline: %v, want the 503 answer", err)
	}
}
