"""specify_device.*: -s, the NPU index comes from DEVICE_ID (a span-pass family)."""
