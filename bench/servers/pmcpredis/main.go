// Command pmcpredis is pmcp as two replicas sharing Redis behind a round
// robin: half of the legacy requests are forwarded to their session's
// owner (see internal/redisserver).
package main

import "github.com/gopmcp/pmcp/bench/internal/redisserver"

func main() { redisserver.Main(false) }
