package cli

import (
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// importFlags are import's settings.
type importFlags struct {
	from, tz, table   string
	batchSize         int
	dryRun, overwrite bool
	noProgress        bool
}

func newImportCmd(g *globals) *cobra.Command {
	var f importFlags
	names := make([]string, 0, len(Sources))
	for n := range Sources {
		names = append(names, n)
	}
	sort.Strings(names)
	cmd := &cobra.Command{
		Use:   "import --from <" + strings.Join(names, "|") + "> <file|->",
		Short: "Import links from another shortener or an export (POST <api>/links/batch)",
		Long: `Read links from a file (- for standard input) record by record and
send them in batches. A code already there with the same destination is
skipped; with another destination it is a conflict, changed only with
--overwrite (through PATCH, so its history is kept). Conflicts and refused
records are printed with their line as they come; a summary ends the run.
Exit 0 when every record was created, skipped or updated, 4 when some
were conflicts or refused.`,
		Args: cobra.ExactArgs(1),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "the file's format: "+strings.Join(names, ", "))
	fl.IntVar(&f.batchSize, "batch-size", 500, "links a request, 1 to 1000")
	fl.BoolVar(&f.dryRun, "dry-run", false, "report what would happen, change nothing")
	fl.BoolVar(&f.overwrite, "overwrite", false, "edit a link whose code is there with another destination")
	fl.StringVar(&f.tz, "tz", "UTC", "IANA zone of times written without one (YOURLS timestamps)")
	fl.StringVar(&f.table, "table", "yourls_url", "the table a YOURLS SQL dump's rows are read from")
	fl.BoolVar(&f.noProgress, "no-progress", false, "no progress bar, even on a terminal")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		open, ok := Sources[f.from]
		if !ok {
			return usageErr("--from must be one of %s", strings.Join(names, ", "))
		}
		if f.batchSize < 1 || f.batchSize > 1000 {
			return usageErr("--batch-size must be 1 to 1000")
		}
		loc, err := time.LoadLocation(f.tz)
		if err != nil || f.tz == "Local" {
			return usageErr("--tz must be an IANA zone name like Europe/Paris")
		}
		c, err := g.client()
		if err != nil {
			return err
		}
		in, size, err := openInput(cmd, args[0])
		if err != nil {
			return err
		}
		defer in.Close()
		counted := &countingReader{r: in}
		src, err := open(counted, SourceOptions{Location: loc, Table: f.table})
		if err != nil {
			return usageErr("%s: %v", args[0], err)
		}
		im := newImporter(c, g, &f, cmd)
		if !f.noProgress && g.env.IsTerminal(cmd.ErrOrStderr()) {
			im.prog = newProgress(cmd.ErrOrStderr(), counted, size)
		}
		return im.run(ctxOf(cmd), src)
	})
	return cmd
}

// openInput opens the file to import (- is standard input) and its size
// (0 when unknown), for the progress bar.
func openInput(cmd *cobra.Command, path string) (io.ReadCloser, int64, error) {
	if path == "-" {
		return io.NopCloser(cmd.InOrStdin()), 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, usageErr("%v", err)
	}
	var size int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return f, size, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
