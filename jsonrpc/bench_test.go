package jsonrpc

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// A typical tools/call request, about 200 bytes.
var benchRequest = []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"get_weather","arguments":{"location":"San Francisco, CA","units":"metric","days":3},"_meta":{"progressToken":"tok-42"}}}`)

func BenchmarkDecodeRequest(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchRequest)))
	for b.Loop() {
		if _, err := Decode(benchRequest, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeResponse(b *testing.B) {
	resp := &Response{ID: Int64ID(42), Result: jsontext.Value(
		`{"content":[{"type":"text","text":"Sunny, 21°C, light breeze from the west."}],"structuredContent":{"temp":21,"sky":"clear"},"isError":false}`)}
	buf, _ := AppendMessage(nil, resp)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		var err error
		if buf, err = AppendMessage(buf[:0], resp); err != nil {
			b.Fatal(err)
		}
	}
}
