package proxy

import "context"

// detached is the context a modern call runs on: the cancellation and
// deadline of the proxy's own context (the call outlives the round that
// started it: a later round fetches its result) and the values of the
// downstream request that started it, as a legacy call, which runs on the
// request's context, has them: the trace span (so the upstream hop joins
// the caller's trace), the downstream client's Apps declaration, the
// caller's auth.
type detached struct {
	context.Context // the proxy's
	values          context.Context
}

func (c detached) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// detach gives a call started by the request of ctx base's lifetime and
// ctx's values.
func detach(base, ctx context.Context) context.Context {
	return detached{Context: base, values: ctx}
}
