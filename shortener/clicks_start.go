package shortener

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
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
	cfg.Sink, cfg.Logger = sink, h.logger
	cfg.GeoIP, cfg.GeoIPPoll = caddy.NewReplacer().ReplaceKnown(h.ClicksGeoIP, ""), h.geoPoll
	if reg := ctx.GetMetricsRegistry(); reg != nil {
		cfg.Registerer = reg
	}
	if h.rdb != nil {
		cfg.Redis, cfg.KeyPrefix = h.rdb.UniversalClient, prefix
	}
	if h.clicks, err = NewClickRecorder(cfg); err != nil {
		return fmt.Errorf("shortener clicks: %w", err)
	}
	return nil
}

// clickSink returns where clicks are counted: tables (or buckets) next to
// the links in the store's own database. A store given to the handler
// before Provision (tests, programs embedding the handler) that is neither
// of the two real stores keeps clicks only if it implements ClickSink
// itself; otherwise clickSink returns nil and clicks are not counted.
func (h *Handler) clickSink() (ClickSink, error) {
	s := h.store
	if sh, ok := s.(sharedStore); ok {
		s = sh.Store
	}
	switch s := s.(type) {
	case *PostgresStore, *EmbeddedStore:
		return clickSinkFor(s, h.ClicksReferrers)
	case ClickSink:
		return s, nil
	}
	if h.ownStore != nil {
		return nil, fmt.Errorf("store %T keeps no clicks", s)
	}
	return nil, nil
}
