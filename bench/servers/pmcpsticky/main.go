// Command pmcpsticky is pmcp as two replicas sharing Redis behind a
// balancer routing on the session id's replica prefix: no legacy request
// is forwarded (see internal/redisserver).
package main

import "github.com/gopmcp/pmcp/bench/internal/redisserver"

func main() { redisserver.Main(true) }
