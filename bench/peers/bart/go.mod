module fibkit-peers/bart

go 1.24.0

require github.com/gaissmai/bart v0.30.0
