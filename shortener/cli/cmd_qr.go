package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

func newQRCmd(g *globals) *cobra.Command {
	var format, level, output string
	var size int
	cmd := &cobra.Command{
		Use:   "qr <code>",
		Short: "Write a link's QR code as SVG or PNG (GET <api>/links/<code>/qr)",
		Args:  cobra.ExactArgs(1),
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "svg", "svg or png")
	fl.IntVar(&size, "size", 0, "side in pixels, 64 to 2048 (default 512)")
	fl.StringVar(&level, "level", "", "error correction L, M (default), Q or H")
	fl.StringVarP(&output, "output", "o", "-", "file to write, - for standard output")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		out := cmd.OutOrStdout()
		if output == "-" && format == "png" && g.env.IsTerminal(out) {
			return usageErr("a PNG is binary: give -o <file> or redirect the output")
		}
		c, err := g.client()
		if err != nil {
			return err
		}
		q := url.Values{"format": {format}}
		if size != 0 {
			q.Set("size", strconv.Itoa(size))
		}
		if level != "" {
			q.Set("level", level)
		}
		resp, err := c.request(ctxOf(cmd), http.MethodGet, linkPath(args[0], "/qr"), q, nil, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = writeOutput(output, out, &capReader{r: resp.Body, left: maxQRBytes})
		return err
	})
	return cmd
}

// maxQRBytes bounds a QR code's image (a 2048-pixel PNG is far smaller):
// a server that sends more is not answering a QR code.
const maxQRBytes = 16 << 20

// capReader fails once more than left bytes come through.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	if c.left -= int64(n); c.left < 0 {
		return n, fmt.Errorf("the answer is larger than %d bytes", maxQRBytes)
	}
	return n, err
}
