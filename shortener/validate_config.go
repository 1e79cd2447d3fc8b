package shortener

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// positions are where a Caddyfile set each setting, by JSON field name
// (`deny_hosts <entry>`, `api_key #<n>` and `api_read_key #<n>` for the
// repeatable ones), so that validate can name the line. nil for a JSON
// config.
type positions map[string]cfparse.Pos

// at adds the position of field to err.
func (p positions) at(field string, err error) error {
	return p[field].Wrap(fmt.Errorf("shortener: %w", err))
}

// Validate judges the settings without touching the network. Provision has
// already judged them, before opening anything, and Caddy calls Validate
// after Provision: the verdict is kept, so each load judges once.
func (h *Handler) Validate() error {
	if !h.judged {
		h.judged, h.verdict = true, h.validate(nil)
	}
	return h.verdict
}

// validate is every rule on the settings, written once: the Caddyfile
// parser calls it with the lines it read (pos), a load with none. Zero
// values stand for defaults.
func (h *Handler) validate(pos positions) error {
	if h.onValidate != nil {
		h.onValidate()
	}
	for _, check := range []func(positions) error{
		h.validateStore, h.validateCodes, h.validateCaches, h.validateClicks, h.validateAPI, h.validateUI, h.validateTargets,
		h.validateDestinations, h.validateWebhooks, h.validateDomains,
	} {
		if err := check(pos); err != nil {
			return err
		}
	}
	return nil
}

func (h *Handler) validateStore(pos positions) error {
	switch h.Store {
	case "", "embedded":
		if h.DSN != "" {
			return pos.at("store", errors.New("dsn is only valid with the postgres store"))
		}
	case "postgres":
		if h.DSN == "" {
			return pos.at("store", errors.New("the postgres store needs a dsn"))
		}
		if h.Path != "" {
			return pos.at("store", errors.New("path is only valid with the embedded store"))
		}
	default:
		return pos.at("store", fmt.Errorf("unknown store '%s' (want postgres or embedded)", h.Store))
	}
	return nil
}

func (h *Handler) validateCodes(pos positions) error {
	switch h.Status {
	case 0, 301, 302, 307, 308:
	default:
		return pos.at("status", fmt.Errorf("invalid status '%d': want 301, 302, 307 or 308", h.Status))
	}
	switch h.Codes {
	case "", "random", "sequential":
	default:
		return pos.at("codes", fmt.Errorf("invalid codes '%s': want random or sequential", h.Codes))
	}
	if h.CodeLength < 0 || (h.CodeLength > 0 && (h.CodeLength < 4 || h.CodeLength > 32)) {
		return pos.at("code_length", fmt.Errorf("invalid code_length '%d': want 4 to 32", h.CodeLength))
	}
	if h.BlockSize < 0 {
		return pos.at("block_size", fmt.Errorf("invalid block_size '%d': must not be negative", h.BlockSize))
	}
	return nil
}

func (h *Handler) validateCaches(pos positions) error {
	if h.LocalCacheEntries < 0 || h.LocalCacheTTL < 0 || h.CacheTTL < 0 || h.NegativeTTL < 0 {
		return pos.at("", errors.New("cache sizes and durations must not be negative"))
	}
	if h.CodeFilterSync != 0 && (h.CodeFilterSync < caddy.Duration(MinCodeFilterSync) || h.CodeFilterSync > caddy.Duration(MaxCodeFilterSync)) {
		return pos.at("code_filter_sync", fmt.Errorf("invalid code_filter_sync %v (want %v to %v)", time.Duration(h.CodeFilterSync), MinCodeFilterSync, MaxCodeFilterSync))
	}
	return nil
}

// validateClicks judges the click settings.
func (h *Handler) validateClicks(pos positions) error {
	if h.ClicksBuffer < 0 || h.ClicksBatch < 0 || h.ClicksInterval < 0 || h.ClicksStreamMaxLen < 0 {
		return pos.at("", errors.New("clicks_buffer, clicks_batch (size and interval) and clicks_stream_maxlen must not be negative"))
	}
	for _, c := range []struct {
		field string
		err   error
	}{
		{"clicks_buffer_bytes", checkClicksBytes("clicks_buffer_bytes", h.ClicksBufferBytes, MinClicksBufferBytes, MaxClicksBufferBytes)},
		{"clicks_stream_bytes", checkClicksBytes("clicks_stream_bytes", h.ClicksStreamBytes, MinClicksStreamBytes, MaxClicksStreamBytes)},
		{"clicks_referrers", checkClicksReferrers(h.ClicksReferrers)},
		{"clicks_retention", checkClicksRetention("clicks_retention", time.Duration(h.ClicksRetention))},
		{"clicks_hourly_retention", checkClicksRetention("clicks_hourly_retention", time.Duration(h.ClicksHourlyRetention))},
		{"clicks_hourly_retention", checkHourlyRetention(time.Duration(h.ClicksHourlyRetention), time.Duration(h.ClicksRetention))},
		{"clicks_geoip", h.checkClicksGeoIP()},
	} {
		if c.err != nil {
			return pos.at(c.field, c.err)
		}
	}
	return nil
}

// validateAPI judges the API's path and keys. Keys with placeholders are
// judged by Provision once expanded.
func (h *Handler) validateAPI(pos positions) error {
	if h.API != "" && (h.API[0] != '/' || strings.Trim(h.API, "/") == "") {
		return pos.at("api", fmt.Errorf("invalid api path '%s': must start with / and not be /", h.API))
	}
	if h.API != "" && len(h.APIKeys) == 0 && len(h.APIReadKeys) == 0 {
		return pos.at("api", errors.New("the api needs at least one api_key or api_read_key"))
	}
	if h.API == "" && len(h.APIKeys) > 0 {
		return pos.at("api_key #1", errors.New("api_key without api"))
	}
	if h.API == "" && len(h.APIReadKeys) > 0 {
		return pos.at("api_read_key #1", errors.New("api_read_key without api"))
	}
	full := make(map[string]int, len(h.APIKeys))
	for i, k := range h.APIKeys {
		full[k] = i + 1
		if err := checkLiteralKey(k); err != nil {
			return pos.at("api_key #"+strconv.Itoa(i+1), fmt.Errorf("api_key %v", err))
		}
	}
	for i, k := range h.APIReadKeys {
		at := "api_read_key #" + strconv.Itoa(i+1)
		if n, ok := full[k]; ok {
			return pos.at(at, fmt.Errorf("%s is also api_key #%d; a key has one scope (remove it from one of them)", at, n))
		}
		if err := checkLiteralKey(k); err != nil {
			return pos.at(at, fmt.Errorf("api_read_key %v", err))
		}
	}
	return nil
}

// checkLiteralKey judges a key as configured; one with placeholders waits
// for Provision.
func checkLiteralKey(k string) error {
	if strings.Contains(k, "{") {
		return nil
	}
	return checkAPIKey(k)
}

// validateTargets judges deny_hosts and base_url.
// denyPrivate is deny_private with its default.
func (h *Handler) denyPrivate() bool { return h.DenyPrivate == nil || *h.DenyPrivate }

func (h *Handler) validateTargets(pos positions) error {
	for _, entry := range h.DenyHosts {
		if _, _, err := urlpolicy.ParseDenyEntry(entry); err != nil {
			return pos.at("deny_hosts "+entry, err)
		}
	}
	if h.BaseURL != "" {
		u, err := url.Parse(h.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return pos.at("base_url", fmt.Errorf("invalid base_url %q (want an http or https origin)", h.BaseURL))
		}
	}
	return nil
}

func checkClicksBytes(field string, n, lo, hi int64) error {
	if n != 0 && (n < lo || n > hi) {
		return fmt.Errorf("invalid %s %d: want %d to %d bytes", field, n, lo, hi)
	}
	return nil
}

func checkClicksReferrers(n int) error {
	if n != 0 && (n < clicks.MinClicksReferrers || n > clicks.MaxClicksReferrers) {
		return fmt.Errorf("invalid clicks_referrers %d: want %d to %d", n, clicks.MinClicksReferrers, clicks.MaxClicksReferrers)
	}
	return nil
}

func checkClicksRetention(name string, d time.Duration) error {
	if d != 0 && (d < MinClicksRetention || d > MaxClicksRetention) {
		return fmt.Errorf("invalid %s %s: want 1d to 36500d", name, d)
	}
	return nil
}

// checkHourlyRetention refuses hourly counters kept longer than the
// rollups they feed (both set; unset ones take their defaults).
func checkHourlyRetention(hourly, all time.Duration) error {
	if hourly != 0 && all != 0 && hourly > all {
		return fmt.Errorf("invalid clicks_hourly_retention %s: longer than clicks_retention %s", hourly, all)
	}
	return nil
}

// checkClicksGeoIP: a GeoIP file serves clicks, so it needs them on. The
// file itself is read and checked when the handler starts.
func (h *Handler) checkClicksGeoIP() error {
	if h.ClicksGeoIP != "" && h.ClicksOff {
		return errors.New("clicks_geoip needs clicks on")
	}
	return nil
}
