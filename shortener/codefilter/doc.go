// Package codefilter holds the parts of the shortener's code filter that
// need no Caddy: the lock-free Bloom filter of stored codes, and the
// cursor of the delta sync over links' creation sequence numbers with its
// gaps. The handler fills and serves them (shortener/codefilter*.go).
package codefilter
