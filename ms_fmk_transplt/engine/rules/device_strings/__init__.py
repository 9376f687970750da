"""device_strings.*: device strings and integer devices ("cuda:0", device="cuda", f-strings,
command-line words) onto the NPU."""
