"""What is found before migrating: the files, the facts across files and the program
model; the cache that keeps them and each file's result."""
