package store

import (
	"encoding/json"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// storedKey is a webhook signing key as both stores keep it.
type storedKey struct {
	Secret string     `json:"secret"` // webhook.Secret.Encode
	Until  *time.Time `json:"until"`
}

func encodeKeys(keys []webhook.Key) ([]byte, error) {
	out := make([]storedKey, len(keys))
	for i, k := range keys {
		out[i].Secret = k.Secret.Encode()
		if !k.Until.IsZero() {
			u := k.Until.UTC()
			out[i].Until = &u
		}
	}
	return json.Marshal(out)
}

func decodeKeys(b []byte) ([]webhook.Key, error) {
	var in []storedKey
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	keys := make([]webhook.Key, len(in))
	for i, k := range in {
		s, err := webhook.ParseSecret(k.Secret)
		if err != nil {
			return nil, err
		}
		keys[i].Secret = s
		if k.Until != nil {
			keys[i].Until = k.Until.UTC()
		}
	}
	return keys, nil
}
