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
	var c bridgeConfig
	if err := readConfigFile(path, &c, pmcp.Unmarshal); err != nil {
		return nil, err
	}
	return &c, c.check(path)
}

// readConfigFile decodes the file at path (at most maxBridgeConfigBytes)
// into v with decode.
func readConfigFile(path string, v any, decode func([]byte, any) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBridgeConfigBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxBridgeConfigBytes {
		return fmt.Errorf("%s: larger than %d bytes", path, maxBridgeConfigBytes)
	}
	if err := decode(b, v); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// check reports what makes c unusable.
func (c *bridgeConfig) check(path string) error {
	if len(c.MCPServers) == 0 {
		return fmt.Errorf("%s: no mcpServers", path)
	}
	return nil
}
