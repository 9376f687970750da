"""Reading and writing safely: no link followed, regular files only, renames that never
replace, the depth of what is parsed."""
