"""The rule catalogue: every rule id declared, and the pages that explain them."""
