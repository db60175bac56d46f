"""Settings and options: every key declared once, the file read and edited, one precedence."""
