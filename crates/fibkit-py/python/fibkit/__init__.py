"""fibkit: longest-prefix-match lookups for IPv4 and IPv6 forwarding tables.

>>> import fibkit, numpy as np
>>> fib = fibkit.Fib.from_prefixes({"10.0.0.0/8": 1, "10.1.0.0/16": 2})
>>> fib.lookup("10.1.2.3")
('10.1.0.0/16', 2)
>>> labels, found = fib.lookup_many(np.array([0x0A010203, 0x0B000000], dtype=np.uint32))
>>> labels.tolist(), found.tolist()
([2, 0], [True, False])

`Fib.load` reads a table file and builds an engine, `Fib.open_image` maps an
image written by `fibkit build` or `Fib.save_image` (no build: ready in
milliseconds, shared between processes). `fibkit.dask` annotates flow logs on
a Dask cluster. `fibkit.engines()` lists the engines, `fibkit.default_spec(family)`
names the one built when none is given.
"""

from ._fibkit import Fib, FibkitError, default_spec, engines

__all__ = ["Fib", "FibkitError", "default_spec", "engines"]
