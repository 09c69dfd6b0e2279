package relay

import (
	"context"
	"testing"
)

func TestServerInfoDropped(t *testing.T) {
	ctx := context.Background()
	if ServerInfoDropped(ctx) {
		t.Error("a context without the promise has it")
	}
	if !ServerInfoDropped(DropsServerInfo(ctx)) {
		t.Error("the promise is lost")
	}
}
