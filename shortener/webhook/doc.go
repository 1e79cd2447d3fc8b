// Package webhook holds the building blocks of signed, at-least-once
// webhooks (issue 36) that need no Caddy: message ids and signing secrets,
// the Standard Webhooks signature (https://www.standardwebhooks.com,
// spec version 1.0.0) and its verification, the retry schedule and how an
// attempt's answer is judged, and an HTTP client that only reaches the
// addresses an operator allows.
//
// The outbox, the dispatcher with its leases and per-endpoint concurrency,
// and the API, CLI and dashboard are built on top of it elsewhere. It
// imports the standard library and shortener/urlpolicy only.
package webhook
