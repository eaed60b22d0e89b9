// Command peers-bart times github.com/gaissmai/bart (its Table and its Fast
// table) on the table and keys that `fibkit-peers prep` wrote, by the method
// of fibkit's benchmark: keys precomputed (converted to netip.Addr before
// timing), every result stored, runs of at least MIN_SECONDS, RUNS runs.
//
//	peers-bart FAMILY DIR MIN_SECONDS RUNS
//
// Reads DIR/table.txt (`prefix/len label` lines) and DIR/keys.bin (a fibkit
// binary trace: 8-byte header, then big-endian addresses); writes
// DIR/results/NAME.res (uint32 label per key, little-endian, MaxUint32 for no
// match) and DIR/results/NAME.timing. Formats: bench/peers/README.md.
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
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

// timeRuns is the timing loop of fibkit's benchmark: whole passes over the
// keys until at least min has elapsed; Mlps of each run.
func timeRuns(keys int, min time.Duration, runs int, pass func()) []float64 {
	mlps := make([]float64, runs)
	for r := range mlps {
		start := time.Now()
		lookups := 0
		for {
			pass()
			lookups += keys
			if elapsed := time.Since(start); elapsed >= min {
				mlps[r] = float64(lookups) / elapsed.Seconds() / 1e6
				break
			}
		}
	}
	return mlps
}

func store(dir, stem, engine string, build time.Duration, mlps []float64, out []uint32) {
	raw := make([]byte, 4*len(out))
	for i, label := range out {
		binary.LittleEndian.PutUint32(raw[4*i:], label)
	}
	base := filepath.Join(dir, "results", stem)
	if err := os.WriteFile(base+".res", raw, 0o644); err != nil {
		fail("%v", err)
	}
	runs := make([]string, len(mlps))
	for i, m := range mlps {
		runs[i] = strconv.FormatFloat(m, 'f', 4, 64)
	}
	line := fmt.Sprintf("peer\t%s\t%d\t%.4f\t%s\n", engine, len(out), build.Seconds(), strings.Join(runs, ","))
	if err := os.WriteFile(base+".timing", []byte(line), 0o644); err != nil {
		fail("%v", err)
	}
	sorted := append([]float64(nil), mlps...)
	sort.Float64s(sorted)
	fmt.Printf("  %-24s %8.2f Mlps (%.2f-%.2f), build %.2f s\n", engine,
		sorted[len(sorted)/2], sorted[0], sorted[len(sorted)-1], build.Seconds())
}

func main() {
	if len(os.Args) != 5 {
		fail("usage: peers-bart FAMILY DIR MIN_SECONDS RUNS")
	}
	family, _ := strconv.Atoi(os.Args[1])
	dir := os.Args[2]
	minSeconds, err1 := strconv.ParseFloat(os.Args[3], 64)
	runs, err2 := strconv.Atoi(os.Args[4])
	if (family != 4 && family != 6) || err1 != nil || err2 != nil || runs < 1 {
		fail("FAMILY must be 4 or 6, MIN_SECONDS a number and RUNS at least 1")
	}
	min := time.Duration(minSeconds * float64(time.Second))
	routes := readTable(filepath.Join(dir, "table.txt"))
	keys := readKeys(filepath.Join(dir, "keys.bin"), family)
	out := make([]uint32, len(keys))
	fmt.Printf("peers-bart: IPv%d %d keys, %d prefixes\n", family, len(keys), len(routes))

	// The two table types are timed by two copies of the loop: a generic
	// or interface loop would add an indirect call per lookup.
	start := time.Now()
	table := new(bart.Table[uint32])
	for _, r := range routes {
		table.Insert(r.prefix, r.label)
	}
	build := time.Since(start)
	mlps := timeRuns(len(keys), min, runs, func() {
		for i, key := range keys {
			label, ok := table.Lookup(key)
			if !ok {
				label = noMatch
			}
			out[i] = label
		}
	})
	store(dir, "bart", "bart", build, mlps, out)
	table = nil

	start = time.Now()
	fast := new(bart.Fast[uint32])
	for _, r := range routes {
		fast.Insert(r.prefix, r.label)
	}
	build = time.Since(start)
	mlps = timeRuns(len(keys), min, runs, func() {
		for i, key := range keys {
			label, ok := fast.Lookup(key)
			if !ok {
				label = noMatch
			}
			out[i] = label
		}
	})
	store(dir, "bart-fast", "bart/fast", build, mlps, out)
}
