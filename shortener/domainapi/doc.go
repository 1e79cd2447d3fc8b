// Package domainapi serves the link domains API under <api>/domains:
// create, list, read, edit (JSON merge patch) and delete the hosts a
// shortener answers codes for, judged by the URL policy's host rules. It
// imports nothing of Caddy or zap; the handler mounts it.
package domainapi
