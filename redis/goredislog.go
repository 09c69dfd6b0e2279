package redis

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// GoRedisLogger routes the log lines of go-redis itself (dial failures,
// dropped connections: printed by default as unformatted "redis: ..."
// lines on stderr) through a *slog.Logger, as warn records with the
// attribute component=go-redis and the "redis: " prefix dropped.
//
// go-redis has one logger per process, not per client, so installing it
// is the program's decision, made once at start-up:
//
//	goredis.SetLogger(redis.NewGoRedisLogger(logger))
//
// This package never calls goredis.SetLogger itself (`pmcp serve --redis`
// does, with its own logger).
type GoRedisLogger struct {
	log *slog.Logger
}

// NewGoRedisLogger returns a GoRedisLogger writing to l; nil discards
// the lines.
func NewGoRedisLogger(l *slog.Logger) *GoRedisLogger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return &GoRedisLogger{log: l}
}

// Printf implements go-redis's logging interface.
func (g *GoRedisLogger) Printf(ctx context.Context, format string, v ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	if !g.log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	g.log.Log(ctx, slog.LevelWarn, strings.TrimSpace(msg), "component", "go-redis")
}
