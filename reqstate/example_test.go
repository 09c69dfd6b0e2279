package reqstate_test

import (
	"errors"
	"fmt"

	"github.com/gopmcp/pmcp/reqstate"
)

func ExampleSealer() {
	// In production, load the ring from configuration so that every replica
	// shares it, e.g. reqstate.KeyFromBase64("2026-07", os.Getenv("...")).
	key, err := reqstate.NewKey("2026-07")
	if err != nil {
		panic(err)
	}
	sealer, err := reqstate.New(reqstate.Options{Keys: []reqstate.Key{key}})
	if err != nil {
		panic(err)
	}

	// Round 1: the handler needs user input. Bind the state to the caller,
	// the method and the request params, and return the token as
	// requestState in an InputRequiredResult.
	params := []byte(`{"name":"book_flight","arguments":{"to":"NRT"}}`)
	binding := reqstate.Binding{
		Principal:    "user-42",
		Method:       "tools/call",
		ParamsDigest: reqstate.DigestParams(params),
	}
	token, err := sealer.Seal(binding, reqstate.State{
		Round:        1,
		Continuation: []byte(`{"step":"confirm-seat"}`),
	})
	if err != nil {
		panic(err)
	}

	// Round 2: the client retries with inputResponses and the token.
	st, err := sealer.Open(binding, token)
	switch {
	case errors.Is(err, reqstate.ErrUnknownKey), errors.Is(err, reqstate.ErrExpired):
		fmt.Println("start over: treat as a first call and re-elicit")
	case err != nil:
		fmt.Println("reply with a JSON-RPC invalid-params error")
	default:
		fmt.Printf("resume round %d at %s\n", st.Round, st.Continuation)
	}

	// The same token presented by someone else is rejected.
	binding.Principal = "user-43"
	_, err = sealer.Open(binding, token)
	fmt.Println(errors.Is(err, reqstate.ErrInvalid))

	// Output:
	// resume round 1 at {"step":"confirm-seat"}
	// true
}
