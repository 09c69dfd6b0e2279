// Package scripts holds the Go tests of the shell scripts in this
// directory (test.sh, conformance.sh, free-port.sh); it has no code.
package scripts
