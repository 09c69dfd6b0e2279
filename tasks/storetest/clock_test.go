package storetest_test

import (
	"testing"
	"time"

	"github.com/gopmcp/pmcp/tasks/storetest"
)

func TestClock(t *testing.T) {
	c := storetest.NewClock(storetest.Epoch)
	if !c.Now().Equal(storetest.Epoch) {
		t.Fatalf("Now = %v", c.Now())
	}
	c.Advance(1500 * time.Microsecond)
	if got := c.Now().Sub(storetest.Epoch); got != 1500*time.Microsecond {
		t.Fatalf("advanced by %v", got)
	}
	c.Set(storetest.Epoch)
	if !c.Now().Equal(storetest.Epoch) {
		t.Fatalf("Set: %v", c.Now())
	}
	if storetest.Epoch.Nanosecond()%int(time.Millisecond) == 0 {
		t.Fatal("Epoch must have a sub-millisecond part to expose rounding")
	}
}
