package clicks

import "time"

// WithUniques sets the uniques of each point of a day, week or month
// Series from the window's daily visitor sketches: a bucket merges the
// sketches of the UTC days whose middle (12:00 UTC) falls in it, the one
// each UTC day overlaps most in any zone; a day whose middle falls before
// the first bucket counts in the first, after the last in the last (the
// days overlapping the window, like the counters). Hour buckets get none
// (left nil): a UTC day's sketch is the finest kept.
func (s SeriesSpec) WithUniques(points []SeriesPoint, days []DayVisitors) {
	if s.Granularity == GranularityHour || len(points) == 0 {
		return
	}
	index := make(map[int64]int, len(points))
	for i, p := range points {
		index[p.Start.Unix()] = i
	}
	sketches := make([][][]byte, len(points))
	for _, d := range days {
		mid := d.Day.Add(12 * time.Hour)
		i, ok := index[s.floor(mid).Unix()]
		if !ok && mid.Before(points[0].Start) {
			i = 0
		} else if !ok {
			i = len(points) - 1
		}
		sketches[i] = append(sketches[i], d.Sketch)
	}
	for i := range points {
		n := int64(0)
		if len(sketches[i]) > 0 {
			n = MergeVisitors(sketches[i])
		}
		points[i].Uniques = &n
	}
}
