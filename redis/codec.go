package redis

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/tasks"
)

// ErrCorrupt reports a stored record that does not decode. Redis replies
// are not peer-controlled, so this only happens when something other than
// this package wrote under its prefix.
var ErrCorrupt = errors.New("pmcp/redis: corrupt record")

// A task is stored as one Redis hash of string fields. The field names are
// short because every replica reads the whole hash on every access.
const (
	fID       = "id"
	fOwner    = "owner"
	fStatus   = "status"
	fMessage  = "msg"
	fCreated  = "created"
	fUpdated  = "updated"
	fExpires  = "expires"
	fTTL      = "ttl"
	fPoll     = "poll"
	fInReq    = "inreq"
	fInResp   = "inresp"
	fResult   = "result"
	fError    = "error"
	fCancel   = "cancel"
	fIsError  = "iserror"
	fHolder   = "holder"
	fLease    = "lease"
	fVersion  = "version"
	fRev      = "rev"
	fKeysUsed = "used"
)

func msString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

func parseMs(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(n).UTC(), nil
}

func marshalField(v any) (string, error) {
	b, err := json.Marshal(v, json.Deterministic(true))
	return string(b), err
}

// encodeRecord flattens rec into the hash's field/value list. Every field
// is always written (empty when unset), so that one HSET replaces the whole
// record.
func encodeRecord(rec tasks.Record) ([]string, error) {
	var inreq, inresp, errField, used string
	var err error
	if rec.InputRequests != nil {
		if inreq, err = marshalField(rec.InputRequests); err != nil {
			return nil, err
		}
	}
	if rec.InputResponses != nil {
		if inresp, err = marshalField(rec.InputResponses); err != nil {
			return nil, err
		}
	}
	if rec.Error != nil {
		if errField, err = marshalField(rec.Error); err != nil {
			return nil, err
		}
	}
	if rec.InputKeysUsed != nil {
		if used, err = marshalField(slices.Sorted(maps.Keys(rec.InputKeysUsed))); err != nil {
			return nil, err
		}
	}
	return []string{
		fID, rec.ID,
		fOwner, rec.Owner,
		fStatus, string(rec.Status),
		fMessage, rec.StatusMessage,
		fCreated, msString(rec.CreatedAt),
		fUpdated, msString(rec.UpdatedAt),
		fExpires, msString(rec.ExpiresAt),
		fTTL, strconv.FormatInt(int64(rec.TTL), 10),
		fPoll, strconv.FormatInt(int64(rec.PollInterval), 10),
		fInReq, inreq,
		fInResp, inresp,
		fResult, string(rec.Result),
		fError, errField,
		fCancel, strconv.FormatBool(rec.CancelRequested),
		fIsError, strconv.FormatBool(rec.ResultIsError),
		fHolder, rec.LeaseHolder,
		fLease, msString(rec.LeaseExpiry),
		fVersion, strconv.FormatUint(rec.Version, 10),
		fRev, strconv.FormatUint(rec.Rev, 10),
		fKeysUsed, used,
	}, nil
}

// pairsToMap turns an encoded field/value list into the map HGETALL
// returns.
func pairsToMap(kv []string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// decodeRecord is the inverse of encodeRecord.
func decodeRecord(h map[string]string) (tasks.Record, error) {
	var rec tasks.Record
	bad := func(field string, err error) (tasks.Record, error) {
		return tasks.Record{}, fmt.Errorf("%w: field %s of task %q: %v", ErrCorrupt, field, h[fID], err)
	}
	rec.ID, rec.Owner = h[fID], h[fOwner]
	rec.Status, rec.StatusMessage = tasks.Status(h[fStatus]), h[fMessage]
	if rec.ID == "" || !rec.Status.Valid() {
		return bad(fStatus, errors.New("missing id or status"))
	}
	var err error
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{fCreated, &rec.CreatedAt}, {fUpdated, &rec.UpdatedAt}, {fExpires, &rec.ExpiresAt}, {fLease, &rec.LeaseExpiry}} {
		if *f.dst, err = parseMs(h[f.name]); err != nil {
			return bad(f.name, err)
		}
	}
	for _, f := range []struct {
		name string
		dst  *time.Duration
	}{{fTTL, &rec.TTL}, {fPoll, &rec.PollInterval}} {
		n, err := strconv.ParseInt(h[f.name], 10, 64)
		if err != nil {
			return bad(f.name, err)
		}
		*f.dst = time.Duration(n)
	}
	if v := h[fInReq]; v != "" {
		if err := json.Unmarshal([]byte(v), &rec.InputRequests); err != nil {
			return bad(fInReq, err)
		}
	}
	if v := h[fInResp]; v != "" {
		if err := json.Unmarshal([]byte(v), &rec.InputResponses); err != nil {
			return bad(fInResp, err)
		}
	}
	if v := h[fResult]; v != "" {
		rec.Result = jsontext.Value(v)
	}
	if v := h[fError]; v != "" {
		rec.Error = new(tasks.Error)
		if err := json.Unmarshal([]byte(v), rec.Error); err != nil {
			return bad(fError, err)
		}
	}
	rec.CancelRequested = h[fCancel] == "true"
	rec.ResultIsError = h[fIsError] == "true"
	rec.LeaseHolder = h[fHolder]
	if rec.Version, err = strconv.ParseUint(h[fVersion], 10, 64); err != nil {
		return bad(fVersion, err)
	}
	if rec.Rev, err = strconv.ParseUint(h[fRev], 10, 64); err != nil {
		return bad(fRev, err)
	}
	if v := h[fKeysUsed]; v != "" {
		var used []string
		if err := json.Unmarshal([]byte(v), &used); err != nil {
			return bad(fKeysUsed, err)
		}
		rec.InputKeysUsed = make(map[string]struct{}, len(used))
		for _, k := range used {
			rec.InputKeysUsed[k] = struct{}{}
		}
	}
	return rec, nil
}

func unmarshalJSON(b []byte, v any) error { return json.Unmarshal(b, v) }
