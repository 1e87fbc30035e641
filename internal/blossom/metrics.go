package blossom

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	uploads, deletes, served prometheus.Counter
	uploadedBytes            prometheus.Counter
	refused                  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) metrics {
	m := metrics{
		uploads:       prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_blossom_uploads_total", Help: "Blossom uploads stored (new blobs and new claims)."}),
		deletes:       prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_blossom_deletes_total", Help: "Blossom claims deleted by their owners."}),
		served:        prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_blossom_gets_total", Help: "Blossom GET and HEAD answers that served a blob."}),
		uploadedBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_blossom_uploaded_bytes_total", Help: "Bytes of new blobs stored."}),
		refused:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cn_blossom_refused_total", Help: "Blossom requests refused, by HTTP status."}, []string{"status"}),
	}
	if reg != nil {
		reg.MustRegister(m.uploads, m.deletes, m.served, m.uploadedBytes, m.refused)
	}
	return m
}
