package errroute

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func TestNew(t *testing.T) {
	withErrors := &caddyhttp.Subroute{Errors: &caddyhttp.HTTPErrorConfig{Routes: caddyhttp.RouteList{{}}}}
	tests := []struct {
		name string
		mods []caddy.Module
		want bool
	}{
		{"none", nil, false},
		{"plain subroutes (route, handle)", []caddy.Module{new(caddyhttp.App), new(caddyhttp.Subroute), new(caddyhttp.Subroute)}, false},
		{"a subroute with error routes", []caddy.Module{new(caddyhttp.App), withErrors, new(caddyhttp.Subroute)}, true},
	}
	for _, tt := range tests {
		if got := New(tt.mods).Above; got != tt.want {
			t.Errorf("New(%s).Above = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWrites(t *testing.T) {
	errorRoutes := &caddyhttp.HTTPErrorConfig{Routes: caddyhttp.RouteList{{}}}
	tests := []struct {
		name    string
		server  *caddyhttp.Server
		inError bool
		above   bool
		want    bool
	}{
		{"no error routes", &caddyhttp.Server{}, false, false, true},
		{"handle_errors routes", &caddyhttp.Server{Errors: errorRoutes}, false, false, false},
		{"empty errors config", &caddyhttp.Server{Errors: &caddyhttp.HTTPErrorConfig{}}, false, false, true},
		{"in the error routes", &caddyhttp.Server{}, true, false, false},
		{"a subroute with error routes", &caddyhttp.Server{}, false, true, false},
		{"no server (unknown)", nil, false, false, false},
	}
	for _, tt := range tests {
		req := httptest.NewRequest("GET", "/", nil)
		if tt.inError {
			req = req.WithContext(context.WithValue(req.Context(), caddyhttp.ErrorCtxKey, errors.New("earlier")))
		}
		req = caddyhttp.PrepareRequest(req, caddy.NewReplacer(), httptest.NewRecorder(), tt.server)
		if got := (Direct{Above: tt.above}).Writes(req); got != tt.want {
			t.Errorf("%s: Writes = %v, want %v", tt.name, got, tt.want)
		}
	}
}
