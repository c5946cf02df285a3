"""Read a ``.safetensors`` checkpoint into read-only NumPy arrays, without copying them.

The format (https://github.com/huggingface/safetensors) is 8 bytes of little-endian
header length ``n``, then ``n`` bytes of JSON ``{name: {"dtype", "shape",
"data_offsets": [begin, end]}}``, then the raw little-endian tensor bytes, offsets
counted from the end of the header.

Why our own reader and not ``safetensors.numpy``: memory-mapping the file makes
every tensor a view of the page cache, so loading takes milliseconds and only the
pages a forward pass touches become resident (MiniLM's 47 MB word-embedding table
is read a few rows at a time). ``safetensors.numpy.load_file`` copies every tensor
into fresh memory (the whole 91 MB) and would be a new runtime dependency;
``bench.pretrained`` prints both loads side by side.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}
"""safetensors dtype names -> NumPy dtypes (bfloat16 has no NumPy dtype and is refused)."""

MAX_HEADER_BYTES = 100 << 20
"""The safetensors specification's own limit: a larger header is a corrupt or hostile file."""


class CheckpointError(ValueError):
    """The file is not a well-formed safetensors checkpoint."""


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """``{name: array}`` for every tensor in ``path``: read-only views of one memory map, in file order."""
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            raise CheckpointError(f"{path}: {size} bytes, too short for a safetensors header")
        n = int.from_bytes(prefix, "little")
        if n > min(MAX_HEADER_BYTES, size - 8):
            raise CheckpointError(f"{path}: header length {n} does not fit in a file of {size} bytes")
        try:
            header = json.loads(f.read(n))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise CheckpointError(f"{path}: the header is not JSON ({err})") from None
    header.pop("__metadata__", None)
    data_bytes = size - 8 - n
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n, shape=(data_bytes,))  # (bytes,) read-only
    return {name: _tensor(path, name, entry, data) for name, entry in header.items()}


def _tensor(path: Path, name: str, entry: dict, data: np.memmap) -> np.ndarray:
    """One header entry as a typed, shaped view of ``data``, after checking that it fits."""
    if entry.get("dtype") not in DTYPES:
        raise CheckpointError(f"{path}: tensor {name!r} has dtype {entry.get('dtype')!r}; readable: {sorted(DTYPES)}")
    dtype = np.dtype(DTYPES[entry["dtype"]])
    shape = tuple(int(s) for s in entry["shape"])
    begin, end = (int(o) for o in entry["data_offsets"])
    if not 0 <= begin <= end <= data.shape[0] or end - begin != math.prod(shape) * dtype.itemsize:
        raise CheckpointError(f"{path}: tensor {name!r} {shape} {entry['dtype']} does not match bytes {begin}-{end}")
    return data[begin:end].view(dtype).reshape(shape)  # a view: no copy, pages are read when touched
