// A minimal OpenTelemetry Collector for barrage's --otlp test (crates/barrage/tests/it/push.rs):
// the OTLP receiver (HTTP) and the file exporter, nothing else. Built by .ci/install into bin/.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	var err error
	f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory())
	if err != nil {
		return f, err
	}
	f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](fileexporter.NewFactory())
	return f, err
}

func main() {
	info := component.BuildInfo{Command: "otelcol-barrage", Description: "barrage test collector", Version: "0.0.1"}
	set := otelcol.CollectorSettings{
		BuildInfo: info,
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
				DefaultScheme:     "file",
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatal(err)
	}
}
