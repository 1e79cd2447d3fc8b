package shortener

import (
	"context"
	"fmt"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// An import (issue 20) brings links from another shortener, or from an
// export, as they were: codes, times, revocations and click totals. It
// never overwrites: a code already stored is skipped when its long URL is
// the import's and its total has not grown (a source without totals gives
// 0), else reported as a conflict with the stored values. Re-running an
// import therefore changes nothing.

// Outcomes of an import item.
const (
	importCreated  = "created"
	importSkipped  = "skipped"
	importConflict = "conflict"
	importRefused  = "refused"
)

// importEntry is one item on its way through an import.
type importEntry struct {
	link    link.ImportLink
	refused error // an importRefusal: never reaches the store
	// Decided in the transaction:
	result   string
	reason   string           // a conflict's difference
	existing *link.ImportLink // a skip's or conflict's stored link
	lead     *importEntry
}

// runImport decides every entry in one transaction of is; with dryRun it
// writes nothing and answers what it would have done.
func runImport(ctx context.Context, is link.ImportStore, entries []*importEntry, dryRun bool) error {
	return is.ImportTx(ctx, !dryRun, func(ctx context.Context, tx link.ImportTx) error {
		var codes []string
		for _, e := range entries {
			e.result, e.reason, e.existing, e.lead = "", "", nil, nil
			if e.refused == nil {
				codes = append(codes, e.link.Code)
			}
		}
		stored, err := tx.Stored(ctx, codes)
		if err != nil {
			return err
		}
		fresh := freshEntries(entries, stored)
		if err := insertFresh(ctx, tx, fresh, dryRun); err != nil {
			return err
		}
		for _, e := range entries { // later items of a code in the batch
			if e.lead != nil {
				target := e.lead.link
				if e.lead.result != importCreated {
					target = *e.lead.existing
				}
				e.judge(target)
			}
		}
		return nil
	})
}

// freshEntries judges the entries whose code is stored and returns the
// first entry of each other code; later entries of that code follow it.
func freshEntries(entries []*importEntry, stored map[string]link.ImportLink) []*importEntry {
	var fresh []*importEntry
	first := map[string]*importEntry{}
	for _, e := range entries {
		if e.refused != nil {
			e.result = importRefused
			continue
		}
		if s, ok := stored[e.link.Code]; ok {
			e.judge(s)
			continue
		}
		if lead, ok := first[e.link.Code]; ok {
			e.lead = lead
			continue
		}
		first[e.link.Code] = e
		fresh = append(fresh, e)
	}
	return fresh
}

// insertFresh inserts the fresh entries; those a concurrent import stored
// first are judged against what it stored.
func insertFresh(ctx context.Context, tx link.ImportTx, fresh []*importEntry, dryRun bool) error {
	if dryRun || len(fresh) == 0 {
		for _, e := range fresh {
			e.result = importCreated
		}
		return nil
	}
	links := make([]link.ImportLink, len(fresh))
	for i, e := range fresh {
		links[i] = e.link
	}
	ok, err := tx.Insert(ctx, links)
	if err != nil {
		return err
	}
	var lost []*importEntry
	var codes []string
	for i, e := range fresh {
		if ok[i] {
			e.result = importCreated
			continue
		}
		lost, codes = append(lost, e), append(codes, e.link.Code)
	}
	if len(lost) == 0 {
		return nil
	}
	stored, err := tx.Stored(ctx, codes)
	if err != nil {
		return err
	}
	for _, e := range lost {
		s, found := stored[e.link.Code]
		if !found {
			return fmt.Errorf("importing %q: the code is neither free nor stored", e.link.Code)
		}
		e.judge(s)
	}
	return nil
}

// judge decides an entry whose code holds s: skipped when the long URL is
// the same and the baseline did not grow, else a conflict naming the
// difference.
func (e *importEntry) judge(s link.ImportLink) {
	e.existing = &s
	switch {
	case s.LongURL != e.link.LongURL:
		e.result, e.reason = importConflict, "long_url differs from the stored link's"
	case e.link.Baseline > s.Baseline:
		e.result, e.reason = importConflict, fmt.Sprintf("clicks: %d given, %d stored", e.link.Baseline, s.Baseline)
	default:
		e.result = importSkipped
	}
}
