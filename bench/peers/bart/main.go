// Command peers-bart times github.com/gaissmai/bart (its Table and its Fast
// table) on the table and keys that `fibkit-peers prep` wrote, by the method
// of fibkit's benchmark: keys precomputed (converted to netip.Addr before
// timing), every result stored, runs of at least MIN_SECONDS.
//
//	peers-bart FAMILY DIR MIN_SECONDS
//
// Reads DIR/table.txt (`prefix/len label` lines) and DIR/keys.bin (a fibkit
// binary trace: 8-byte header, then big-endian addresses), builds both
// tables, then speaks the rounds protocol of `fibkit-peers rounds`
// (bench/peers/rust/src/rounds.rs) on standard input and output: announces
// `config NAME peer key BUILD_S` per table and `ready`; for each `run NAME
// FILE` line times one run, answers `mlps VALUE` and, when FILE is given,
// writes the results there (uint32 label per key, little-endian, MaxUint32
// for no match). Formats: bench/peers/README.md.
//
// On `seq` and `seq-announced` keys (DIR/info.txt says which) each lookup's key is the
// stored key XORed with the label found for the one before (0 for none and
// at the start of each pass; into the low 32 bits of the address), as
// fibkit's `Lookup::lookup_chained`; the XOR is made on the address bytes
// inside the timed loop.
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gaissmai/bart"
)

const noMatch = math.MaxUint32

type route struct {
	prefix netip.Prefix
	label  uint32
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "peers-bart: "+format+"\n", args...)
	os.Exit(2)
}

func readTable(path string) []route {
	f, err := os.Open(path)
	if err != nil {
		fail("%v", err)
	}
	defer f.Close()
	var routes []route
	scanner := bufio.NewScanner(f)
	line := 0
	for scanner.Scan() {
		line++
		text := strings.TrimSpace(scanner.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			fail("%s:%d: expected `prefix/len label`", path, line)
		}
		prefix, err := netip.ParsePrefix(fields[0])
		if err != nil {
			fail("%s:%d: %v", path, line, err)
		}
		label, err := strconv.ParseUint(fields[1], 10, 32)
		if err != nil {
			fail("%s:%d: %v", path, line, err)
		}
		routes = append(routes, route{prefix, uint32(label)})
	}
	if err := scanner.Err(); err != nil {
		fail("%s: %v", path, err)
	}
	return routes
}

// readKeys reads keys.bin, a fibkit binary trace: "FKTR" 0x01, the family,
// two zero bytes, then the addresses big-endian (network order).
func readKeys(path string, family int) []netip.Addr {
	raw, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	const header = 8
	if len(raw) < header || string(raw[:5]) != "FKTR\x01" || int(raw[5]) != family {
		fail("%s: not a fibkit binary trace of IPv%d keys", path, family)
	}
	raw = raw[header:]
	size := 4
	if family == 6 {
		size = 16
	}
	if len(raw)%size != 0 {
		fail("%s: %d bytes is not a whole number of %d-byte keys", path, len(raw), size)
	}
	keys := make([]netip.Addr, len(raw)/size)
	for i := range keys {
		chunk := raw[i*size : (i+1)*size]
		if family == 4 {
			keys[i] = netip.AddrFrom4([4]byte(chunk))
		} else {
			keys[i] = netip.AddrFrom16([16]byte(chunk))
		}
	}
	return keys
}

// timeRun is the timing loop of fibkit's benchmark: whole passes over the
// keys until at least min has elapsed; Mlps.
func timeRun(keys int, min time.Duration, pass func()) float64 {
	start := time.Now()
	lookups := 0
	for {
		pass()
		lookups += keys
		if elapsed := time.Since(start); elapsed >= min {
			return float64(lookups) / elapsed.Seconds() / 1e6
		}
	}
}

func writeResults(path string, out []uint32) {
	raw := make([]byte, 4*len(out))
	for i, label := range out {
		binary.LittleEndian.PutUint32(raw[4*i:], label)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		fail("%v", err)
	}
}

// config is one table as the rounds see it: its name, build time and one
// run into out.
type config struct {
	name  string
	build time.Duration
	run   func() float64
}

// serve speaks the rounds protocol until `quit` or the end of input.
func serve(configs []config, out []uint32) {
	for _, c := range configs {
		fmt.Printf("config\t%s\tpeer\tkey\t%.4f\n", c.name, c.build.Seconds())
	}
	fmt.Println("ready")
	input := bufio.NewScanner(os.Stdin)
	input.Buffer(make([]byte, 1<<16), 1<<20)
	for input.Scan() {
		fields := strings.SplitN(input.Text(), "\t", 3)
		if fields[0] == "quit" {
			return
		}
		if fields[0] != "run" || len(fields) < 2 {
			fail("unknown command `%s`", input.Text())
		}
		found := false
		for _, c := range configs {
			if c.name != fields[1] {
				continue
			}
			found = true
			mlps := c.run()
			if len(fields) == 3 && fields[2] != "" {
				writeResults(fields[2], out)
			}
			fmt.Printf("mlps\t%.4f\n", mlps)
		}
		if !found {
			fail("no configuration `%s`", fields[1])
		}
	}
	if err := input.Err(); err != nil {
		fail("%v", err)
	}
}

// isChained reports whether the info.txt at path names a chained pattern
// (`seq`, `seq-announced`).
func isChained(path string) bool {
	text, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	for _, line := range strings.Split(string(text), "\n") {
		if line == "pattern seq" || line == "pattern seq-announced" {
			return true
		}
	}
	return false
}

// chain returns key XORed with label in its low 32 bits.
func chain(key netip.Addr, label uint32) netip.Addr {
	if key.Is4() {
		a := key.As4()
		binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(a[:])^label)
		return netip.AddrFrom4(a)
	}
	a := key.As16()
	binary.BigEndian.PutUint32(a[12:], binary.BigEndian.Uint32(a[12:])^label)
	return netip.AddrFrom16(a)
}

func main() {
	if len(os.Args) != 4 {
		fail("usage: peers-bart FAMILY DIR MIN_SECONDS")
	}
	family, _ := strconv.Atoi(os.Args[1])
	dir := os.Args[2]
	minSeconds, err := strconv.ParseFloat(os.Args[3], 64)
	if (family != 4 && family != 6) || err != nil {
		fail("FAMILY must be 4 or 6 and MIN_SECONDS a number")
	}
	min := time.Duration(minSeconds * float64(time.Second))
	routes := readTable(filepath.Join(dir, "table.txt"))
	keys := readKeys(filepath.Join(dir, "keys.bin"), family)
	out := make([]uint32, len(keys))
	fmt.Fprintf(os.Stderr, "peers-bart: IPv%d %d keys, %d prefixes\n", family, len(keys), len(routes))

	// The two table types are timed by two copies of the loop: a generic
	// or interface loop would add an indirect call per lookup.
	start := time.Now()
	table := new(bart.Table[uint32])
	for _, r := range routes {
		table.Insert(r.prefix, r.label)
	}
	tableBuild := time.Since(start)
	start = time.Now()
	fast := new(bart.Fast[uint32])
	for _, r := range routes {
		fast.Insert(r.prefix, r.label)
	}
	fastBuild := time.Since(start)
	chained := isChained(filepath.Join(dir, "info.txt"))
	configs := []config{
		{"bart", tableBuild, func() float64 {
			return timeRun(len(keys), min, func() {
				for i, key := range keys {
					label, ok := table.Lookup(key)
					if !ok {
						label = noMatch
					}
					out[i] = label
				}
			})
		}},
		{"bart/fast", fastBuild, func() float64 {
			return timeRun(len(keys), min, func() {
				for i, key := range keys {
					label, ok := fast.Lookup(key)
					if !ok {
						label = noMatch
					}
					out[i] = label
				}
			})
		}},
	}
	if chained {
		configs = []config{
			{"bart", tableBuild, func() float64 {
				return timeRun(len(keys), min, func() {
					previous := uint32(0)
					for i, key := range keys {
						label, ok := table.Lookup(chain(key, previous))
						if !ok {
							label = noMatch
						}
						out[i] = label
						previous = label
						if !ok {
							previous = 0
						}
					}
				})
			}},
			{"bart/fast", fastBuild, func() float64 {
				return timeRun(len(keys), min, func() {
					previous := uint32(0)
					for i, key := range keys {
						label, ok := fast.Lookup(chain(key, previous))
						if !ok {
							label = noMatch
						}
						out[i] = label
						previous = label
						if !ok {
							previous = 0
						}
					}
				})
			}},
		}
	}
	serve(configs, out)
}
