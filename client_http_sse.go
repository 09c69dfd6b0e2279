package pmcp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// ErrSSEEventTooLarge is returned (wrapped) when one server-sent event of
// an HTTP response exceeds HTTPClientOptions.MaxMessageBytes. The stream
// is abandoned.
var ErrSSEEventTooLarge = errors.New("pmcp: server-sent event too large")

// maxSSERetry bounds the reconnection delay a server may ask for, and
// maxSSEIDBytes the event ids the client keeps.
const (
	maxSSERetry   = time.Minute
	maxSSEIDBytes = 1024
)

// sseFrame is one dispatched server-sent event.
type sseFrame struct {
	event string
	data  []byte
	id    string
	// hasID: the event set the last event id (possibly to "").
	hasID bool
	retry time.Duration
	// hasRetry: the event carried a valid retry field.
	hasRetry bool
}

// sseDecoder parses a text/event-stream body (WHATWG HTML, "Server-sent
// events"), bounded: an event whose data, or a line, exceeds max bytes is
// an error. Lines end in LF or CRLF.
type sseDecoder struct {
	r   *bufio.Reader
	max int
}

func newSSEDecoder(r io.Reader, max int) *sseDecoder {
	return &sseDecoder{r: bufio.NewReaderSize(r, 16<<10), max: max}
}

// readLine returns one line without its terminator, bounded by max+64
// bytes (room for the field name).
func (s *sseDecoder) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(line)+len(chunk) > s.max+64 {
			return nil, ErrSSEEventTooLarge
		}
		switch {
		case err == nil:
			if line == nil {
				line = chunk
			} else {
				line = append(line, chunk...)
			}
			line = line[:len(line)-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			line = append(line, chunk...)
		default:
			// At the end of the body a last line without terminator is
			// dropped with its incomplete event, as the standard says.
			// Any other error, a cut body's io.ErrUnexpectedEOF included,
			// is returned: the stream broke, it did not end.
			return nil, err
		}
	}
}

// next returns the next event. Comments and events with neither data nor
// id nor retry are skipped. It returns io.EOF at a clean end of stream,
// and the body's error (io.ErrUnexpectedEOF for a cut chunked body) when
// the stream broke.
func (s *sseDecoder) next() (*sseFrame, error) {
	ev := &sseFrame{}
	var data bytes.Buffer
	hasData, touched := false, false
	for {
		line, err := s.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if !touched {
				continue
			}
			if hasData {
				b := data.Bytes()
				if n := len(b); n > 0 && b[n-1] == '\n' {
					b = b[:n-1]
				}
				ev.data = b
			}
			return ev, nil
		}
		if line[0] == ':' {
			continue // comment (keep-alive)
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if data.Len()+len(value)+1 > s.max {
				return nil, ErrSSEEventTooLarge
			}
			data.Write(value)
			data.WriteByte('\n')
			hasData, touched = true, true
		case "event":
			ev.event = string(value)
			touched = true
		case "id":
			// An id with NUL is ignored, as the standard says; so is one
			// too long to send back as Last-Event-ID.
			if bytes.IndexByte(value, 0) < 0 && len(value) <= maxSSEIDBytes {
				ev.id, ev.hasID, touched = string(value), true, true
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 32); err == nil && len(value) > 0 && value[0] != '+' {
				ev.retry = min(time.Duration(ms)*time.Millisecond, maxSSERetry)
				ev.hasRetry, touched = true, true
			}
		}
	}
}
