package shortener

import (
	"net/http"
	"net/url"
	"slices"
)

// apiParams are the query parameters the API's endpoints read; others are
// ignored (a client's cache buster, a tracking tag).
var apiParams = map[string]bool{
	"q": true, "tag": true, "status": true, "sort": true, "limit": true, "cursor": true,
	"format": true, "with_stats": true, "from": true, "to": true, "granularity": true, "tz": true,
	"group_by": true, "size": true, "level": true, "domain": true, "force": true,
}

// checkQuery judges an API request's query string before any endpoint
// reads it: it must parse, and each parameter of the API is given once
// and not empty ("?tag=" is refused, not read as absent: leave a
// parameter out for its default). The error names the first parameter
// at fault, in byte order.
func checkQuery(raw string) error {
	if raw == "" {
		return nil
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return apiErr(http.StatusBadRequest, "query string: %v", err)
	}
	names := make([]string, 0, len(q))
	for name := range q {
		if apiParams[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		switch vals := q[name]; {
		case len(vals) > 1:
			return apiErr(http.StatusBadRequest, "%s: given %d times, at most once is allowed", name, len(vals))
		case vals[0] == "":
			return apiErr(http.StatusBadRequest, "%s: empty; leave the parameter out for its default", name)
		}
	}
	return nil
}
