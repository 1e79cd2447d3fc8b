package shortener

import (
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Click rollups in an import (issue 20's --with-stats): an item may carry
// "hourly", the people and bots of each UTC hour the link was clicked, as
// GET <api>/links/export?with_stats=1 writes them (days already rolled up
// at their 00:00 hour). The import that creates the link adds them as
// counted clicks, in its transaction; the link's baseline is then clicks
// minus their sum, so its all-time total stays clicks. Retention later
// rolls the old hours up into days, as it does for any hour.

// maxImportHours bounds the rows of one item: 400 days of rollups and a
// week of hours take under 600.
const maxImportHours = 20000

// importHourly judges the rows into l (whose CreatedAt is set) and sets
// its baseline: given is the item's clicks, nil when absent (then the sum
// of the rows).
func importHourly(rows []link.ImportHour, given *int64, l *link.ImportLink, now time.Time) error {
	if len(rows) > maxImportHours {
		return refuse("hourly", "hourly: %d rows given, at most %d are allowed", len(rows), maxImportHours)
	}
	var sum int64
	seen := make(map[time.Time]struct{}, len(rows))
	for i, row := range rows {
		t, err := importTime("hourly", row.Hour, now.Add(importSkew))
		if err != nil {
			return err
		}
		if !t.Equal(t.Truncate(time.Hour)) {
			return refuse("hourly", "hourly[%d]: hour must be the start of an hour", i)
		}
		if _, dup := seen[t]; dup {
			return refuse("hourly", "hourly[%d]: hour %s given twice", i, row.Hour)
		}
		seen[t] = struct{}{}
		if row.People < 0 || row.Bots < 0 || row.People > link.MaxBaseline || row.Bots > link.MaxBaseline {
			return refuse("hourly", "hourly[%d]: people and bots must be 0 to %d", i, int64(link.MaxBaseline))
		}
		if sum += row.People + row.Bots; sum > link.MaxBaseline {
			return refuse("hourly", "hourly: more than %d clicks in all", int64(link.MaxBaseline))
		}
		if row.People+row.Bots > 0 {
			l.Hourly = append(l.Hourly, link.HourlyClicks{Hour: t, People: row.People, Bots: row.Bots})
		}
	}
	if given == nil {
		return nil // a baseline of 0: the rows are the total
	}
	if *given < sum {
		return refuse("clicks", "clicks: %d given, less than the %d clicks of hourly", *given, sum)
	}
	l.Baseline = *given - sum
	return nil
}
