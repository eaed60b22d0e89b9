"""Type stubs of fibkit's native module (re-exported by `fibkit`)."""

from os import PathLike
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

Family = Union[int, str]
Addresses = Union[
    npt.NDArray[np.uint32],  # IPv4, host integers
    npt.NDArray[np.uint8],  # IPv6, shape (n, 16), network order
    npt.NDArray[np.bytes_],  # IPv6, dtype S16
    npt.NDArray[np.str_],
    npt.NDArray[np.object_],
    Sequence[Union[str, int, None]],
    Any,  # pyarrow.Array / pyarrow.ChunkedArray of strings
]
Prefixes = Union[Mapping[str, int], Iterable[Tuple[str, int]]]

def engines() -> list[dict[str, Any]]: ...
def default_spec(family: int) -> str: ...

class FibkitError(ValueError):
    """A table, image or engine spec fibkit cannot use."""

class Fib:
    """A forwarding table: longest-prefix-match lookups to labels."""

    @staticmethod
    def load(
        path: Union[str, PathLike[str]],
        engine: Optional[str] = None,
        family: Optional[Family] = None,
        lenient: bool = False,
        *,
        format: Optional[str] = None,
        label: str = "nexthop",
        peer: Optional[Union[str, int]] = None,
        skip_bad: bool = False,
    ) -> "Fib": ...
    def nexthops(self) -> list[str]: ...
    def notes(self) -> list[str]: ...
    @staticmethod
    def open_image(path: Union[str, PathLike[str]]) -> "Fib": ...
    @staticmethod
    def from_prefixes(
        prefixes: Prefixes, engine: Optional[str] = None, family: Optional[Family] = None
    ) -> "Fib": ...
    def lookup(self, addr: Union[str, int]) -> Optional[Tuple[Optional[str], int]]: ...
    def lookup_many(
        self, addrs: Addresses
    ) -> Tuple[npt.NDArray[np.uint32], npt.NDArray[np.bool_]]: ...
    def apply(
        self, announce: Optional[Prefixes] = None, withdraw: Optional[Iterable[str]] = None
    ) -> dict[str, Any]: ...
    def apply_updates(
        self,
        path: Union[str, PathLike[str]],
        *,
        format: Optional[str] = None,
        label: Optional[str] = None,
        peer: Optional[Union[str, int]] = None,
        lenient: bool = False,
        skip_bad: bool = False,
    ) -> dict[str, Any]: ...
    def prefixes(self) -> list[Tuple[str, int]]: ...
    def save_image(self, path: Union[str, PathLike[str]]) -> None: ...
    def stats(self) -> dict[str, Any]: ...
    @property
    def family(self) -> int: ...
    @property
    def spec(self) -> str: ...
    @property
    def is_image(self) -> bool: ...
