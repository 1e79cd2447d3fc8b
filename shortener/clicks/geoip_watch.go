package clicks

import (
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// DefaultGeoIPPoll is how often the GeoIP file is stated for a change.
const DefaultGeoIPPoll = 10 * time.Second

// GeoIP is the recorder's GeoIP database and its watcher. The writer
// goroutine alone looks up (db) and closes: the watcher opens and checks
// a changed file and leaves it in next, which the writer swaps in before
// its next lookup, so no file is closed while a lookup reads it.
type GeoIP struct {
	path   string
	poll   time.Duration
	logger *slog.Logger
	Cur    *GeoDB                // the writer's
	Next   atomic.Pointer[GeoDB] // checked by the watcher, not yet taken
	seen   os.FileInfo           // the watcher's: the file last tried
	failed string                // the watcher's: the last error logged
	Loads  atomic.Int64          // files loaded, the first included
	Bad    atomic.Int64          // changed files rejected
	Done   chan struct{}         // closed when the watcher has stopped
	shared sharedReader          // the redirect path's reader (Country)
	built  atomic.Int64          // the loaded file's build time, Unix s (share)
}

// OpenGeoIP loads the GeoIP file at path; an error names the path. When
// the file cannot be read or fails the check while another GeoIP of the
// same path is open in the process (a config reload: the old config still
// runs), the last good file read there is used instead and the failure is
// logged at warn: a reload never fails on a GeoIP file gone bad. With no
// good file ever read there (the first load), the error is returned.
func OpenGeoIP(path string, poll time.Duration, logger *slog.Logger) (*GeoIP, error) {
	if poll <= 0 {
		poll = DefaultGeoIPPoll
	}
	g := &GeoIP{path: path, poll: poll, logger: logger, Done: make(chan struct{})}
	seen, _ := os.Stat(path) // before the read: a change after it is tried again
	db, err := openGeoDB(path)
	if err == nil {
		lastGoodGeo.use(path, db)
		g.Cur, g.seen = db, db.info
		g.share(db)
		g.loaded(db, "GeoIP database loaded")
		return g, nil
	}
	if g.Cur = g.lastGood(); g.Cur == nil {
		return nil, fmt.Errorf("clicks_geoip %q: %w", path, err)
	}
	g.seen, g.failed = seen, err.Error()
	g.share(g.Cur)
	g.Bad.Add(1)
	typ, built := g.Cur.describe()
	logger.Warn("GeoIP database not loaded; the last good one stays", slog.String("path", path), slog.Any("error", err),
		slog.String("type", typ), slog.String("built", built.Format(time.RFC3339)), slog.Int64("bytes", int64(len(g.Cur.data))))
	return g, nil
}

// lastGood opens the last good file read at g's path by a GeoIP still
// open, taking a use of it; nil: there is none.
func (g *GeoIP) lastGood() *GeoDB {
	data, info, ok := lastGoodGeo.useLast(g.path)
	if !ok {
		return nil
	}
	db, err := openGeoBytes(data, info) // checked when it was read
	if err != nil {
		lastGoodGeo.release(g.path)
		return nil
	}
	return db
}

// db returns the file to look up in, first swapping in (and closing the
// one it replaces) a file the watcher loaded. Writer only.
func (g *GeoIP) db() *GeoDB {
	if g.Next.Load() != nil {
		if db := g.Next.Swap(nil); db != nil {
			g.Cur.close()
			g.Cur = db
		}
	}
	return g.Cur
}

// watch states the file every poll interval until stop is closed, and
// Loads it when it changed (check).
func (g *GeoIP) watch(stop <-chan struct{}) {
	defer close(g.Done)
	t := time.NewTicker(g.poll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			g.Check()
		}
	}
}

// Check loads the file if it is another file, or another size or
// modification time, than the one last tried. A file that cannot be read
// or checked is logged and the loaded one stays; it is tried again when
// it changes.
func (g *GeoIP) Check() {
	info, err := os.Stat(g.path)
	if err != nil {
		g.reject(err)
		return
	}
	if sameGeoFile(info, g.seen) {
		return
	}
	g.seen = info
	db, err := openGeoDB(g.path)
	if err != nil {
		g.Bad.Add(1)
		g.reject(err)
		return
	}
	if db.info != nil {
		g.seen = db.info
	}
	g.failed = ""
	lastGoodGeo.put(g.path, db)
	g.share(db)
	if old := g.Next.Swap(db); old != nil {
		old.close() // never taken by the writer
	}
	g.loaded(db, "GeoIP database reloaded")
}

// reject logs why the file was not loaded, once per distinct error.
func (g *GeoIP) reject(err error) {
	if msg := err.Error(); msg != g.failed {
		g.failed = msg
		g.logger.Warn("GeoIP database not reloaded; the loaded one stays", slog.String("path", g.path), slog.Any("error", err))
	}
}

func (g *GeoIP) loaded(db *GeoDB, msg string) {
	g.Loads.Add(1)
	typ, built := db.describe()
	g.logger.Info(msg, slog.String("path", g.path), slog.String("type", typ),
		slog.String("built", built.Format(time.RFC3339)), slog.Int64("bytes", db.info.Size()))
}

// close stops using the files once the watcher has stopped: the writer
// calls it as it ends.
func (g *GeoIP) close() {
	<-g.Done
	g.closeFiles()
}

// closeFiles closes the files and gives back g's use of its path's last
// good file.
func (g *GeoIP) closeFiles() {
	g.Cur.close()
	g.Next.Swap(nil).close()
	lastGoodGeo.release(g.path)
}
