package shortener

import (
	"context"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// publishLinks is publishLink for many links in one Redis round trip.
func (c *cache) publishLinks(ctx context.Context, links []link.Link) error {
	for _, l := range links {
		c.codes.add(l.Code)
		defer c.dropLocal(l.Code)
	}
	if c.rdb == nil || len(links) == 0 {
		return nil
	}
	pipe := c.rdb.Pipeline()
	for _, l := range links {
		v, ttl := c.encodeLink(l)
		if ttl > 0 {
			pipe.Set(ctx, c.key(l.Code), v, ttl)
		} else {
			pipe.Del(ctx, c.key(l.Code))
		}
		pipe.Publish(ctx, c.channel, l.Code)
	}
	_, err := pipe.Exec(ctx)
	return err
}
