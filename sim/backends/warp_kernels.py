# mypy: ignore-errors
# (Warp kernel bodies are Warp code, not Python that mypy can type.)
"""Small Warp kernels of the Warp backend. Import only after ``warp_setup.import_warp()``
(which points Warp's kernel cache at a known folder before Warp initializes)."""

import warp as wp


@wp.kernel(enable_backward=False)
def gather_cols(src: wp.array2d[float], cols: wp.array[int], dst: wp.array2d[float]):
    """dst[w, k] = src[w, cols[k]]"""
    w, k = wp.tid()
    dst[w, k] = src[w, cols[k]]


@wp.kernel(enable_backward=False)
def scatter_cols(src: wp.array2d[float], cols: wp.array[int], dst: wp.array2d[float]):
    """dst[w, cols[k]] = src[w, k]"""
    w, k = wp.tid()
    dst[w, cols[k]] = src[w, k]
