package probe

import (
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Exposition is a scrape of a process's metrics, parsed by Prometheus's own
// text parser.
type Exposition map[string]*dto.MetricFamily

// ParseExposition parses a scrape's text.
func ParseExposition(text string) (Exposition, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(text))
}

// Sum adds up the counters or gauges of metric name that carry label
// name=value (any, if name is "").
func (e Exposition) Sum(metric, name, value string) float64 {
	var total float64
	for _, m := range e[metric].GetMetric() {
		if name == "" || hasLabel(m, name, value) {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// Most is the largest gauge of metric over its series: of the workers, the
// busiest controller's (in a fan-out, the pods').
func (e Exposition) Most(metric string) float64 {
	var m float64
	for _, s := range e[metric].GetMetric() {
		m = max(m, s.GetGauge().GetValue())
	}
	return m
}
