module github.com/gopmcp/pmcp/cmd/pmcp

go 1.26.0

replace github.com/gopmcp/pmcp => ../..

require (
	github.com/go-json-experiment/json v1.27.2
	github.com/gopmcp/pmcp v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require (
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
