package ratelimit

import (
	"fmt"
	"net/http"
	"strconv"
)

// Handler `body`: what a refusal the handler writes itself carries.
const (
	bodyNone    = "none"
	bodyProblem = "problem"
)

// problemType is the problem type of a refusal: RFC 9457's `about:blank`,
// whose title is the status's phrase.
const problemType = "about:blank"

// problemBody is the precomputed RFC 9457 body of a zone's refusals with
// status, around the retry seconds it carries twice:
//
//	{"type":"about:blank","title":"Too Many Requests","status":429,
//	 "detail":"Rate limit exceeded in zone \"api\": retry in 12 s.",
//	 "zone":"api","retry_after":12}
type problemBody struct {
	head, mid, tail string
}

// newProblemBody prepares the body of zone's refusals with status. Zone
// names are letters, digits, `_` and `-`: no escaping inside the detail.
func newProblemBody(zone string, status int) problemBody {
	return problemBody{
		head: fmt.Sprintf(`{"type":%q,"title":%q,"status":%d,"detail":"Rate limit exceeded in zone \"%s\": retry in `,
			problemType, http.StatusText(status), status, zone),
		mid:  fmt.Sprintf(` s.","zone":%q,"retry_after":`, zone),
		tail: "}",
	}
}

// write writes a refusal with status and its problem+json body,
// retry being the Retry-After seconds already set in the headers.
func (p *problemBody) write(w http.ResponseWriter, status int, retry string) {
	b := make([]byte, 0, len(p.head)+len(p.mid)+len(p.tail)+2*len(retry))
	b = append(b, p.head...)
	b = append(b, retry...)
	b = append(b, p.mid...)
	b = append(b, retry...)
	b = append(b, p.tail...)
	hdr := w.Header()
	hdr["Content-Type"] = []string{"application/problem+json"}
	hdr["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
