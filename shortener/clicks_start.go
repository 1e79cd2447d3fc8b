package shortener

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// startClicks starts the click recorder (no network I/O: its writer and
// consumer connect in the background).
func (h *Handler) startClicks(ctx caddy.Context, prefix string) error {
	sink, err := h.clickSink()
	if err != nil {
		return fmt.Errorf("shortener clicks: %w", err)
	}
	if sink == nil {
		h.logger.Info("click counting is off: the store given to the handler keeps no clicks",
			zap.String("store", fmt.Sprintf("%T", h.store)))
		return nil
	}
	cfg := h.clickConfig()
	cfg.Sink, cfg.Logger = sink, ctx.Slogger()
	cfg.GeoIP, cfg.GeoIPPoll = caddy.NewReplacer().ReplaceKnown(h.ClicksGeoIP, ""), h.geoPoll
	if reg := ctx.GetMetricsRegistry(); reg != nil {
		cfg.Registerer = reg
	}
	if h.rdb != nil {
		cfg.Redis, cfg.KeyPrefix = h.rdb.UniversalClient, prefix
	}
	if h.clicks, err = clicks.NewRecorder(cfg); err != nil {
		return fmt.Errorf("shortener clicks: %w", err)
	}
	return nil
}

// clickSink returns where clicks are counted: tables (or buckets) next to
// the links in the store's own database. A store given to the handler
// before Provision (tests, programs embedding the handler) that is neither
// of the two real stores keeps clicks only if it implements Sink
// itself; otherwise clickSink returns nil and clicks are not counted.
func (h *Handler) clickSink() (clicks.Sink, error) {
	s := h.store
	if sh, ok := s.(sharedStore); ok {
		s = sh.Store
	}
	switch s := s.(type) {
	case *store.PostgresStore, *store.EmbeddedStore:
		return clickSinkFor(s, h.ClicksReferrers)
	case clicks.Sink:
		return s, nil
	}
	if h.ownStore != nil {
		return nil, fmt.Errorf("store %T keeps no clicks", s)
	}
	return nil, nil
}

// clickSinkFor returns the click sink kept in the link store's own
// database: the tables of migrations/002_clicks.up.sql and those after it
// (applied by OpenPostgres) or buckets in the embedded store's bbolt
// file. referrers caps the named referrer hosts, and the named values of
// each dimension, per link per day (0: DefaultClicksReferrers).
func clickSinkFor(s link.Store, referrers int) (clicks.Sink, error) {
	switch s := s.(type) {
	case *store.PostgresStore:
		return store.NewPostgresClickSink(s.Pool, referrers), nil
	case *store.EmbeddedStore:
		return store.NewEmbeddedClickSink(s.Db, referrers)
	}
	return nil, fmt.Errorf("click counting needs the postgres or embedded store, not %T", s)
}
