"""What follows a migration (issue 33): the tuning, profiling and precision-comparison kits
generated from the user's own training script. ``training_loop.py`` finds where a script trains:
the loop whose iterations are training steps."""
