"""expected_errors.*: error messages code expects from CUDA (pytest.raises(match=...))."""
