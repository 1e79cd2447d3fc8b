package clicks

import (
	"os"
	"path/filepath"
	"sync"
)

// geoShelf keeps, per GeoIP path, the bytes of the last file read there
// that passed the check, for as long as a GeoIP of that path is open in
// the process. A config reload opens the new config's GeoIP before it
// closes the old one's, so a file that went bad after a good one was
// loaded finds the good one here: the reload goes on with it (OpenGeoIP)
// rather than failing. The last GeoIP of a path to close drops its bytes.
//
// It is a usage pool of its own (the package imports no Caddy): one use
// per open GeoIP, released by its close.
type geoShelf struct {
	mu     sync.Mutex
	byPath map[string]*shelvedGeo
}

// shelvedGeo is the last good file of a path and the GeoIPs using it.
type shelvedGeo struct {
	data []byte
	info os.FileInfo
	uses int
}

// lastGoodGeo is the process's shelf, shared by every recorder as Caddy's
// usage pools are.
var lastGoodGeo = geoShelf{byPath: map[string]*shelvedGeo{}}

// use adds a use of path whose good file db was just read there.
func (s *geoShelf) use(path string, db *GeoDB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byPath[filepath.Clean(path)]
	if e == nil {
		e = &shelvedGeo{}
		s.byPath[filepath.Clean(path)] = e
	}
	e.data, e.info = db.data, db.info
	e.uses++
}

// useLast adds a use of path and returns its last good file; ok is false
// (and no use is added) when no GeoIP of path is open.
func (s *geoShelf) useLast(path string) (data []byte, info os.FileInfo, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byPath[filepath.Clean(path)]
	if e == nil {
		return nil, nil, false
	}
	e.uses++
	return e.data, e.info, true
}

// put makes db, a good file a watcher just read at path, its last good
// one (the watcher's GeoIP holds a use).
func (s *geoShelf) put(path string, db *GeoDB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byPath[filepath.Clean(path)]; e != nil {
		e.data, e.info = db.data, db.info
	}
}

// release gives back a use of path; the last one drops its file.
func (s *geoShelf) release(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := filepath.Clean(path)
	if e := s.byPath[key]; e != nil {
		if e.uses--; e.uses <= 0 {
			delete(s.byPath, key)
		}
	}
}

// OpenGeoIPs returns how many GeoIPs of path are open in the process:
// while it is above 0, the last good file read there is kept.
func OpenGeoIPs(path string) int {
	lastGoodGeo.mu.Lock()
	defer lastGoodGeo.mu.Unlock()
	if e := lastGoodGeo.byPath[filepath.Clean(path)]; e != nil {
		return e.uses
	}
	return 0
}
