"""The numpy encoder's elementwise kernels: erf and BERT's exact GELU, to float32 precision."""

from __future__ import annotations

import math

import numpy as np

from ragmeter.embeddings._bert import _gelu, erf


def test_erf_matches_the_math_module() -> None:
    x = np.concatenate([np.linspace(-7.0, 7.0, 200_001), [0.0, -0.0, 40.0, -40.0, 1e-30]])
    expected = np.array([math.erf(v) for v in x])
    for dtype, tolerance in ((np.float64, 2e-7), (np.float32, 5e-7)):
        got = erf(x.astype(dtype))
        assert got.dtype == dtype and got.shape == x.shape
        assert np.abs(got - expected).max() < tolerance


def test_gelu_is_x_times_the_normal_cdf_in_place() -> None:
    x = np.linspace(-12.0, 12.0, 3 * 100_003, dtype=np.float32).reshape(3, -1)
    expected = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.ravel().tolist()])
    out = _gelu(x)
    assert out is x
    np.testing.assert_allclose(out.ravel(), expected, rtol=1e-6, atol=1e-6)
