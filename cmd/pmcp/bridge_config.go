package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/gopmcp/pmcp"
)

// bridgeVersion is the version the bridge announces up- and downstream.
const bridgeVersion = "0.1.0"

// maxBridgeConfigBytes bounds --config.
const maxBridgeConfigBytes = 1 << 20

// bridgeConfig is the "mcpServers" file format hosts and gateways share.
type bridgeConfig struct {
	MCPServers map[string]bridgeServer `json:"mcpServers"`
}

type bridgeServer struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Type is accepted ("stdio", "http", "streamable-http") and otherwise
	// ignored: command or url decides.
	Type string `json:"type,omitempty"`
}

func (c *bridgeConfig) names() []string {
	var out []string
	for k := range c.MCPServers {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func readBridgeConfig(path string) (*bridgeConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBridgeConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBridgeConfigBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxBridgeConfigBytes)
	}
	var c bridgeConfig
	if err := pmcp.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(c.MCPServers) == 0 {
		return nil, fmt.Errorf("%s: no mcpServers", path)
	}
	return &c, nil
}
