"""Shared helpers of the Python suite: the shared tables, and the answers of
the Rust reference table (the `fibkit` command's `radix` engine) for any
addresses."""

import gzip
import os
import pathlib
import shutil
import socket
import subprocess

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
DATA = REPO.parent / "shared" / "data"


def data(name: str) -> pathlib.Path:
    path = DATA / name
    if not path.exists():
        pytest.fail(f"{path} is missing: the tests read the shared tables from ../shared/data")
    return path


def fibkit_cli() -> str:
    """The `fibkit` command built by `cargo build --release` (or $FIBKIT_CLI)."""
    candidates = [os.environ.get("FIBKIT_CLI"), str(REPO / "target" / "release" / "fibkit"), shutil.which("fibkit")]
    for candidate in candidates:
        if candidate and os.path.exists(candidate):
            return candidate
    pytest.fail("the fibkit command is not built: run `cargo build --release -p fibkit-cli` first")


def reference(table: pathlib.Path, addrs: list[str]) -> list[tuple[str, int] | None]:
    """(prefix, label) or None per address, from the Rust reference trie."""
    out = subprocess.run(
        [fibkit_cli(), "lookup", str(table), "--engine", "radix"],
        input="\n".join(addrs) + "\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(out) == len(addrs), "one answer per address"
    answers = []
    for line in out:
        _, prefix, label = line.split()
        answers.append(None if prefix == "-" else (prefix, int(label)))
    return answers


def table_prefixes(table: pathlib.Path) -> list[str]:
    with gzip.open(table, "rt") as lines:
        return [line.split()[0] for line in lines if line.strip() and not line.startswith("#")]


def boundary_addresses_v6(prefixes: list[str], random: int, seed: int) -> list[str]:
    """Every range boundary of an IPv6 table (each prefix's first and last
    address, and the addresses just outside them) plus random addresses."""
    top = (1 << 128) - 1
    values = {0, top}
    for text in prefixes:
        addr, plen = text.split("/")
        first = int.from_bytes(socket.inet_pton(socket.AF_INET6, addr), "big")
        last = first | ((1 << (128 - int(plen))) - 1)
        values.update((first, last, max(first - 1, 0), min(last + 1, top)))
    rng = np.random.default_rng(seed)
    values.update(int.from_bytes(rng.bytes(16), "big") for _ in range(random))
    return [socket.inet_ntop(socket.AF_INET6, v.to_bytes(16, "big")) for v in sorted(values)]


class V4Table:
    """An IPv4 `prefix label` table read with numpy, and its longest-prefix
    match by one sorted array per prefix length, searched from the longest
    length down: an implementation independent of fibkit, slow to build,
    simple to trust."""

    def __init__(self, path: pathlib.Path):
        nets, plens, labels, names = [], [], [], []
        with gzip.open(path, "rt") as lines:
            for line in lines:
                if not line.strip() or line.startswith("#"):
                    continue
                prefix, label = line.split()
                addr, plen = prefix.split("/")
                a, b, c, d = addr.split(".")
                nets.append((int(a) << 24) | (int(b) << 16) | (int(c) << 8) | int(d))
                plens.append(int(plen))
                labels.append(int(label))
                names.append(prefix)
        self.names = np.array(names, dtype=object)
        self.nets = np.array(nets, np.uint32)
        self.plens = np.array(plens, np.uint32)
        self.labels = np.array(labels, np.uint32)
        self.levels = []
        for plen in sorted(set(plens), reverse=True):
            rows = np.flatnonzero(self.plens == plen)
            order = rows[np.argsort(self.nets[rows])]
            mask = np.uint32(0) if plen == 0 else np.uint32((0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF)
            self.levels.append((mask, self.nets[order], self.labels[order], order))

    def lookup(self, addrs: np.ndarray):
        """(found, labels, prefix names or None) per address."""
        found = np.zeros(len(addrs), dtype=bool)
        labels = np.zeros(len(addrs), dtype=np.uint32)
        rows = np.full(len(addrs), -1)
        for mask, nets, level_labels, level_rows in self.levels:
            keys = addrs & mask
            at = np.minimum(np.searchsorted(nets, keys), len(nets) - 1)
            hit = (nets[at] == keys) & ~found
            labels[hit] = level_labels[at[hit]]
            rows[hit] = level_rows[at[hit]]
            found |= hit
        names = np.where(found, self.names[np.maximum(rows, 0)], None)
        return found, labels, names

    def boundaries(self, random: int, seed: int) -> np.ndarray:
        """Every range boundary (each prefix's first and last address and
        the addresses just outside them) plus random addresses, sorted."""
        first = self.nets.astype(np.int64)
        last = first + (np.int64(1) << (32 - self.plens.astype(np.int64))) - 1
        rng = np.random.default_rng(seed)
        values = np.concatenate(
            [first, last, first - 1, last + 1, rng.integers(0, 1 << 32, random), [0, (1 << 32) - 1]]
        )
        return np.unique(np.clip(values, 0, (1 << 32) - 1)).astype(np.uint32)


def dotted(addrs: np.ndarray) -> list[str]:
    """IPv4 addresses (uint32) as dotted-quad text."""
    octets = [((addrs >> shift) & 0xFF).tolist() for shift in (24, 16, 8, 0)]
    return [f"{a}.{b}.{c}.{d}" for a, b, c, d in zip(*octets)]
