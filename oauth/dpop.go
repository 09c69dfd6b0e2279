package oauth

import "net/url"

// HTU is the form in which a DPoP proof's htu (RFC 9449 §4.2) is signed
// and compared: the canonical resource form (Canonical) of the URI
// without query and fragment (RFC 9449 §4.3). A client signs HTU of the
// request URL; a server compares HTU of the proof's htu with HTU of its
// own URI, so case, a default port or an empty path never make a valid
// proof fail.
func HTU(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return Canonical(u.String())
}
