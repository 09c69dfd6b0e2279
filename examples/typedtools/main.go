// Command typedtools is the README's "Typed tools" example: a tool whose
// arguments are constrained by jsonschema struct tags and whose output is a
// map, served over stdio in both protocol eras.
package main

import (
	"context"
	"log"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// example:tags begin

type ForecastIn struct {
	City  string `json:"city" jsonschema:"description='City, country',minLength=2"`
	Days  int    `json:"days,omitempty" jsonschema:"minimum=1,maximum=16,default=3"`
	Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
}

func forecast(ctx context.Context, extra *pmcp.RequestHandlerExtra, in ForecastIn) (map[string]any, error) {
	if in.Days == 0 {
		in.Days = 3 // the default is documented in the schema, not applied
	}
	return map[string]any{"city": in.City, "days": in.Days, "summary": "sunny"}, nil
}

// example:tags end

func main() {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "weather", Version: "1.0.0"})
	if err != nil {
		log.Fatal(err)
	}
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "forecast", Description: "Forecast for a city."}, forecast); err != nil {
		log.Fatal(err) // a tag that does not fit its field fails here
	}
	if err := srv.Serve(context.Background(), stdio.Stdio(stdio.Options{})); err != nil {
		log.Fatal(err)
	}
}
