"""The options, each declared once (option_schema.py), the bounds of their values, the
values shell completion offers, the console --color makes."""
