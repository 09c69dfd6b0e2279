package otelenv_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gopmcp/pmcp"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	"github.com/gopmcp/pmcp/otel/otelenv"
)

// Exporters as the OTEL_* variables ask; with none set nothing is
// exported and the middleware costs next to nothing.
func ExampleSetup() {
	getenv := func(string) string { return "" } // os.Getenv in a real program
	tel, err := otelenv.Setup(context.Background(), otelenv.Options{Getenv: getenv})
	if err != nil {
		log.Fatal(err)
	}
	defer tel.Shutdown(context.Background()) // flushes spans and metrics

	opts := tel.Instrumentation()
	_, err = pmcp.NewServer(pmcp.ServerOptions{
		Middleware: []pmcp.Middleware{pmcpotel.ServerMiddleware(opts)},
	})
	fmt.Println("exporting:", tel.Enabled(), "error:", err)
	// Output: exporting: false error: <nil>
}
