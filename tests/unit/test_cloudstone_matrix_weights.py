"""A CloudStone transition matrix's weights become Locust's integer weights (hundredths,
round(w * 100)) when a trial starts: a row of 1e308 weights overflowed there
(OverflowError: an internal error mid-run, after validate and plan said nothing), and
a row of weights below 0.005 became a row of no transition. Validate says both, at the
matrix."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from vbench.workloads.cloudstone.params import CloudstoneParams, integer_weights


@pytest.mark.parametrize(("row", "said"), [
    ({"HomePage": 1e308, "Login": 1e308}, "too large"),
    ({"Login": 1e-320}, "no weight above 0.005"),
    ({"Login": 0.004, "HomePage": 0.001}, "no weight above 0.005"),
])
def test_a_row_locust_cannot_take_is_refused(row: dict[str, float], said: str) -> None:
    matrix = {"HomePage": row, "Login": {"HomePage": 1.0}}
    with pytest.raises(ValidationError) as caught:
        CloudstoneParams(matrix=matrix)
    assert "matrix row HomePage" in str(caught.value) and said in str(caught.value)


def test_a_row_of_small_and_large_weights_is_taken_and_scaled() -> None:
    matrix = {"HomePage": {"Login": 0.01, "HomePage": 1e306}, "Login": {"HomePage": 1.0}}
    weights = integer_weights(CloudstoneParams(matrix=matrix).effective_matrix())
    assert weights["HomePage"] == {"Login": 1, "HomePage": round(1e306 * 100)}
