package gateway

import (
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// appendAuditLine appends rec as one JSON object and a newline. The keys
// come in AuditRecord's field order with its json names; Duration is
// written as "durationMs". It never fails: invalid UTF-8 becomes U+FFFD,
// and Arguments that cannot be encoded (a NaN, a channel) are replaced by
// "argumentsError" naming why, so the line stays strict JSON.
func appendAuditLine(b []byte, rec *AuditRecord) []byte {
	b = append(b, `{"time":"`...)
	b = rec.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = appendAuditString(b, "subject", rec.Subject, true)
	b = appendAuditString(b, "clientId", rec.ClientID, true)
	b = appendAuditString(b, "method", rec.Method, false)
	b = appendAuditString(b, "target", rec.Target, true)
	b = appendAuditString(b, "upstream", rec.Upstream, true)
	b = appendAuditString(b, "decision", rec.Decision, false)
	b = appendAuditString(b, "outcome", rec.Outcome, false)
	if rec.Code != 0 {
		b = append(b, `,"code":`...)
		b = strconv.AppendInt(b, int64(rec.Code), 10)
	}
	b = append(b, `,"durationMs":`...)
	b = appendMillis(b, rec.Duration)
	if len(rec.Arguments) > 0 {
		args, err := json.Marshal(rec.Arguments, json.Deterministic(true), jsontext.AllowInvalidUTF8(true))
		if err == nil {
			b = append(b, `,"arguments":`...)
			b = append(b, args...)
		} else {
			b = appendAuditString(b, "argumentsError", err.Error(), false)
		}
	}
	return append(b, "}\n"...)
}

// appendAuditString appends ,"key":"value" (nothing when omitEmpty and
// value is empty).
func appendAuditString(b []byte, key, value string, omitEmpty bool) []byte {
	if omitEmpty && value == "" {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	b, _ = jsontext.AppendQuote(b, value) // invalid UTF-8 is replaced; the error only says so
	return b
}

// appendMillis appends d in milliseconds with microsecond resolution
// ("12.345", "0.002", "7"), negative durations as 0.
func appendMillis(b []byte, d time.Duration) []byte {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	b = strconv.AppendInt(b, us/1000, 10)
	if frac := us % 1000; frac != 0 {
		b = append(b, '.')
		var digits [4]byte
		s := strconv.AppendInt(digits[:0], 1000+frac, 10)[1:] // zero-padded to 3 digits
		for len(s) > 0 && s[len(s)-1] == '0' {
			s = s[:len(s)-1]
		}
		b = append(b, s...)
	}
	return b
}
