// Package webhookapi is the shortener management API's part for webhooks:
// the endpoints under <api>/webhooks (create, list, read, edit, delete,
// rotate the signing secret) and their messages (list, attempts, replay).
// The handler authenticates the request and mounts it (API.Serve); the
// JSON it reads and writes is described in the handler's openapi.json.
// It needs no Caddy: it works on a webhook.Store, a link.EventLog and a
// webhook.Client.
package webhookapi
