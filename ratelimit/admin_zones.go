package ratelimit

import (
	"cmp"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
)

// zoneInfo is one loaded zone, as GET /ratelimit/zones lists it.
type zoneInfo struct {
	Handler     uint64        `json:"handler"` // the handler's number in this process
	Store       string        `json:"store"`   // redis, memory or custom
	Name        string        `json:"name"`
	Key         string        `json:"key"`
	Algorithm   string        `json:"algorithm"`
	Events      int64         `json:"events,omitempty"`
	Window      string        `json:"window,omitempty"`
	Calendar    string        `json:"calendar,omitempty"` // hour, day, week or month
	TZ          string        `json:"tz,omitempty"`       // the calendar's time zone
	Burst       int64         `json:"burst,omitempty"`
	Cost        string        `json:"cost,omitempty"`
	Dynamic     *DynamicQuota `json:"dynamic,omitempty"`
	Plans       *plansInfo    `json:"plans,omitempty"`
	CountStatus []int         `json:"count_status,omitempty"`
	OnError     string        `json:"on_error"`
	DryRun      bool          `json:"dry_run,omitempty"`
	Brake       float64       `json:"brake"` // the factor the handler applies now
}

// plansInfo is a zone's plans source and what has been read of it.
type plansInfo struct {
	Postgres string    `json:"postgres"` // without its password
	Table    string    `json:"table"`
	Refresh  string    `json:"refresh"`
	PlanKey  string    `json:"plan_key"`
	Plans    int       `json:"plans"`              // rows loaded
	LoadedAt time.Time `json:"loaded_at,omitzero"` // last successful read
	Failures int64     `json:"failures,omitempty"` // failed reads since
}

func zoneInfos() []zoneInfo {
	out := []zoneInfo{}
	for _, e := range loadedHandlers() {
		for _, z := range e.h.Zones {
			info := zoneInfo{
				Handler:     e.id,
				Store:       storeName(e.h),
				Name:        z.Name,
				Key:         z.Key,
				Algorithm:   z.limit.Algorithm,
				Events:      z.Events,
				Burst:       z.Burst,
				Cost:        string(z.Cost),
				Dynamic:     z.Dynamic,
				CountStatus: z.CountStatus,
				OnError:     [...]string{"open", "closed", "local"}[z.onError],
				DryRun:      z.DryRun,
				Brake:       e.h.brake.factor(),
			}
			if z.Window > 0 {
				info.Window = time.Duration(z.Window).String()
			}
			if c := z.limit.Calendar; c.On() {
				info.Calendar, info.TZ = c.Unit.String(), c.Loc.String()
			}
			if q := z.quota; q != nil && q.plans != nil && z.Plans != nil {
				p := &plansInfo{
					Postgres: redactDSN(z.Plans.Postgres),
					Table:    cmp.Or(z.Plans.Table, DefaultPlansTable),
					Refresh:  q.plans.refresh.String(),
					PlanKey:  q.planKey,
					Failures: q.plans.fails.Load(),
				}
				t := q.plans.table.Load()
				p.Plans, p.LoadedAt = len(t.byKey), t.loaded
				info.Plans = p
			}
			out = append(out, info)
		}
	}
	return out
}

// redactDSN hides the password of a DSN; a placeholder is shown as is.
func redactDSN(dsn string) string {
	if isTemplate(dsn) {
		return dsn
	}
	return pgpool.Redact(dsn)
}

func storeName(h *Handler) string {
	switch {
	case h.inProcess:
		return "memory"
	case h.client != nil:
		return "redis"
	}
	return "custom"
}
