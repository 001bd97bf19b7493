package scorecard

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart size, and the PNG resolution.
const (
	chartWidth  = 10 * vg.Inch
	chartHeight = 6.5 * vg.Inch
	chartDPI    = 120
	// maxTickLabels bounds the period labels on the x axis; with more
	// periods every k-th is labelled.
	maxTickLabels = 14
)

// PlotFormat returns the chart format a file name asks for: "svg" or "png"
// by its extension, case-insensitively.
func PlotFormat(name string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(name)); ext {
	case ".svg":
		return "svg", nil
	case ".png":
		return "png", nil
	default:
		return "", fmt.Errorf("plot %s: want a file name ending in .svg or .png", name)
	}
}

// PlotFile writes the chart of rows (see WritePlot) to the file name, in
// the format its extension names.
func PlotFile(name string, rows []Row, g Granularity, title string) (err error) {
	format, err := PlotFormat(name)
	if err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("plot: %w", cerr)
		}
	}()
	return WritePlot(f, format, rows, g, title)
}

// WritePlot draws the cost-to-outcome chart of rows in two stacked panels
// that share the period axis: cost per solve in US dollars above, solve
// rate in percent below with the ADR-035 acceptance line at 60% (dashed,
// named in the panel's subtitle). Periods the window cuts short are
// labelled with a "*". A period
// without solves has no cost per solve, and one without tasks no solve
// rate: their points are left out and the lines broken there. format is
// "svg" or "png".
func WritePlot(w io.Writer, format string, rows []Row, g Granularity, title string) error {
	if len(rows) == 0 {
		return fmt.Errorf("plot: no periods to draw")
	}
	cost, rate := plot.New(), plot.New()
	cost.Title.Text = title
	cost.Title.TextStyle.Font.Size = vg.Points(14)
	cost.Y.Label.Text = "cost per solve (USD)"
	rate.Y.Label.Text = "solve rate (%)"
	rate.X.Label.Text = periodAxisLabel(g)
	for _, p := range []*plot.Plot{cost, rate} {
		for _, st := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
			&p.X.Tick.Label, &p.Y.Tick.Label} {
			st.Font.Typeface, st.Font.Variant = "Liberation", "Sans"
		}
		p.X.Min, p.X.Max = -0.5, float64(len(rows))-0.5
		p.Y.Min = 0
		p.Y.Label.TextStyle.Font.Size = vg.Points(12)
		p.X.Label.TextStyle.Font.Size = vg.Points(12)
		p.Y.Tick.Label.Font.Size = vg.Points(10)
		p.X.Tick.Label.Font.Size = vg.Points(10)
		p.Add(plotter.NewGrid())
	}
	rate.Y.Max = 100
	rate.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 20, Label: "20"}, {Value: 40, Label: "40"},
		{Value: 60, Label: "60"}, {Value: 80, Label: "80"}, {Value: 100, Label: "100"}}
	cost.Y.Tick.Marker = dollarTicks{}

	labels := make([]string, len(rows))
	for i, r := range rows {
		labels[i] = r.Period
		if r.Partial {
			labels[i] += "*"
			rate.X.Label.Text = periodAxisLabel(g) + "; * partial period"
		}
	}
	ticks, rotate := periodTicks(labels)
	rate.X.Tick.Marker = ticks
	blank := make(plot.ConstantTicks, len(ticks))
	for i, t := range ticks {
		blank[i] = plot.Tick{Value: t.Value, Label: " "}
	}
	cost.X.Tick.Marker = blank
	if rotate {
		rate.X.Tick.Label.Rotation = math.Pi / 6
		rate.X.Tick.Label.XAlign = draw.XRight
		rate.X.Tick.Label.YAlign = draw.YTop
	}

	costColor := color.RGBA{R: 0x1f, G: 0x5f, B: 0xa8, A: 0xff}
	rateColor := color.RGBA{R: 0x2a, G: 0x8a, B: 0x3e, A: 0xff}
	var maxCost float64
	if err := addSeries(cost, rows, costColor, func(r Row) (float64, bool) {
		v := float64(r.CostPerSolve) / 1e6
		maxCost = math.Max(maxCost, v)
		return v, r.Solved > 0
	}); err != nil {
		return err
	}
	if maxCost == 0 {
		cost.Y.Max = 0.01
	} else {
		cost.Y.Max = maxCost * 1.15
	}
	if err := addSeries(rate, rows, rateColor, func(r Row) (float64, bool) {
		return 100 * float64(r.SolveRate), r.Tasks > 0
	}); err != nil {
		return err
	}
	target, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 60}, {X: float64(len(rows)) - 0.5, Y: 60}})
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	target.Color = color.RGBA{R: 0xc0, G: 0x39, B: 0x2b, A: 0xff}
	target.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	target.Width = vg.Points(1.2)
	rate.Add(target)
	// The line is named in a subtitle rather than a legend, which could
	// cover points.
	rate.Title.Text = "solve rate per period; dashed: ADR-035 acceptance, solve rate >= 60%"
	rate.Title.TextStyle.Font.Size = vg.Points(11)

	var canvas vg.CanvasWriterTo
	switch format {
	case "svg":
		canvas = vgsvg.New(chartWidth, chartHeight)
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(chartWidth, chartHeight), vgimg.UseDPI(chartDPI), vgimg.UseBackgroundColor(color.White))}
	default:
		return fmt.Errorf("plot: format %q: want svg or png", format)
	}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(10), PadBottom: vg.Points(8), PadLeft: vg.Points(10),
		PadRight: vg.Points(24), PadY: vg.Points(14)}
	plots := [][]*plot.Plot{{cost}, {rate}}
	dc := draw.New(canvas)
	canvases := plot.Align(plots, tiles, dc)
	cost.Draw(canvases[0][0])
	rate.Draw(canvases[1][0])
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("plot: write %s: %w", format, err)
	}
	return nil
}

// addSeries adds a line with points through the rows that have a value,
// broken where a row has none.
func addSeries(p *plot.Plot, rows []Row, c color.Color, value func(Row) (float64, bool)) error {
	var run plotter.XYs
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		line, points, err := plotter.NewLinePoints(run)
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		line.Color, line.Width = c, vg.Points(1.8)
		points.Color, points.Shape, points.Radius = c, draw.CircleGlyph{}, vg.Points(2.8)
		p.Add(line, points)
		run = nil
		return nil
	}
	for i, r := range rows {
		v, ok := value(r)
		if !ok {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		run = append(run, plotter.XY{X: float64(i), Y: v})
	}
	return flush()
}

func periodAxisLabel(g Granularity) string {
	switch g {
	case Week:
		return "ISO week (UTC, Monday to Sunday)"
	case Month:
		return "month (UTC)"
	}
	return "day (UTC)"
}

// periodTicks labels every k-th period so that at most maxTickLabels show,
// with unlabelled ticks between; rotate says the labels should be slanted
// to stay apart.
func periodTicks(labels []string) (plot.ConstantTicks, bool) {
	step := (len(labels) + maxTickLabels - 1) / maxTickLabels
	step = max(step, 1)
	var ticks plot.ConstantTicks
	shown, width := 0, 0
	for i, l := range labels {
		if i%step == 0 {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: l})
			shown++
			width = max(width, len(l))
		} else {
			ticks = append(ticks, plot.Tick{Value: float64(i)})
		}
	}
	// About 7 points per character at 10 points; the axis is about 640
	// points wide.
	return ticks, shown*(width*7+12) > 640
}

// dollarTicks labels the cost axis from 0 in dollars: about six labelled
// steps of 1, 2, 2.5 or 5 times a power of ten, with as many decimals as
// the step needs, and an unlabelled tick between labels.
type dollarTicks struct{}

// Ticks implements plot.Ticker.
func (dollarTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return []plot.Tick{{Value: lo, Label: fmt.Sprintf("$%.2f", lo)}}
	}
	raw := (hi - lo) / 6
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * pow
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	decimals := 2
	for ; decimals < 9; decimals++ {
		if s := step * math.Pow(10, float64(decimals)); math.Abs(s-math.Round(s)) < 1e-6 {
			break
		}
	}
	var ticks []plot.Tick
	for i := 0; ; i++ {
		v := math.Ceil(lo/step)*step + float64(i)*step
		if v > hi+step*1e-9 {
			break
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("$%.*f", decimals, v)})
		if mid := v + step/2; mid <= hi {
			ticks = append(ticks, plot.Tick{Value: mid})
		}
	}
	return ticks
}
